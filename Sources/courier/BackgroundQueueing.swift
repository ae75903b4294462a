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
        let queued: [Int] = await BackgroundCommandSupport.onThread {
            let session = URLSession(
                configuration: .background(withIdentifier: identifier), delegate: DetachedDelegate(),
                delegateQueue: nil)
            defer { session.finishTasksAndInvalidate() }
            return zip(jobs, destinations).map { job, destination in
                let task = session.downloadTask(with: job.url)
                task.taskDescription = destination
                task.resume()
                return task.taskIdentifier
            }
        }
        // Each task reached the daemon's socket before resume() returned; the daemon may still be reading it. A
        // task whose session could not reach the daemon failed at once and never shows.
        var known: Set<Int> = []
        for _ in 0..<100 {
            if case .listed(let tasks) = try await BackgroundCommandSupport.ask(.list(identifier: identifier)) {
                known = Set(tasks.map(\.task))
                if queued.allSatisfy(known.contains) { break }
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        for (number, destination) in zip(queued, destinations) {
            guard known.contains(number) else { throw CLIError("courierd did not take the download to \(destination)") }
            if !quiet { print("\(identifier)\t\(number)\t\(destination)") }
        }
        return 0
    }

    /// The queueing process's delegate: it leaves before anything happens, so it receives nothing worth keeping.
    final class DetachedDelegate: NSObject, URLSessionDownloadDelegate, Sendable {
        func urlSession(
            _ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL
        ) {}
    }
}
