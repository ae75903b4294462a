import Courier
import Foundation

/// `courier get --background ID URL -o FILE`: hands the downloads to `courierd` in the background session `ID` and
/// returns at once; `courier queue wait ID` later collects the files. Each task carries its destination as its
/// `taskDescription`, which the daemon keeps across processes.
enum BackgroundQueueing {
    static func queue(_ jobs: [TransferJob], identifier: String, quiet: Bool) async throws -> Int32 {
        let destinations = try jobs.map { job -> String in
            let file: URL
            switch job.output {
            case .file(let url):
                file = url
            case .remoteName(let directory, let fromHeader):
                guard !fromHeader else { throw CLIError("--background cannot be used with -J", exitCode: 2) }
                file = directory.appendingPathComponent(DownloadPlacement.safeFileName(job.url.lastPathComponent))
            case .standardOutput:
                throw CLIError("--background needs -o FILE or -O for every URL", exitCode: 2)
            }
            return file.standardizedFileURL.path
        }
        // A download that finishes before this session has left is handed to it (the daemon delivers to whoever is
        // attached): it must be saved here, as `queue wait` would. An empty delegate let it be deleted, and the
        // task, no longer queued, was reported as not taken.
        let delegate = QueueWaitDelegate(board: ProgressBoard(enabled: false), quiet: true)
        let queued: [Int] = await BackgroundCommandSupport.onThread {
            let session = URLSession(
                configuration: .background(withIdentifier: identifier), delegate: delegate, delegateQueue: nil)
            defer { session.finishTasksAndInvalidate() }
            return zip(jobs, destinations).map { job, destination in
                let task = session.downloadTask(with: job.url)
                task.taskDescription = destination
                task.resume()
                return task.taskIdentifier
            }
        }
        // Each task reached the daemon's socket before resume() returned; the daemon may still be reading it. A
        // task whose session could not reach the daemon failed at once and never shows. The wait is bounded by time,
        // as the daemon's answers are (30 s), not by a count of tries: 100 tries of 20 ms gave up on a loaded machine
        // while the daemon was still starting, and reported a download it then ran as not taken.
        var known: Set<Int> = []
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if case .listed(let tasks) = try await BackgroundCommandSupport.ask(.list(identifier: identifier)) {
                known = Set(tasks.map(\.task))
            }
            known.formUnion(delegate.ended)
            if queued.allSatisfy(known.contains) { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        for (number, destination) in zip(queued, destinations) {
            guard known.contains(number) else { throw CLIError("courierd did not take the download to \(destination)") }
            if !quiet { print("\(identifier)\t\(number)\t\(destination)") }
        }
        // A download that ended while this process was attached, and failed or could not be saved, fails the run.
        return delegate.failed > 0 ? 1 : 0
    }
}
