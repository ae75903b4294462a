import Courier
import CourierHTTP
import CourierStore
import Foundation
import NIOConcurrencyHelpers

/// The delegate of `courier queue wait`: shows each transfer of the background session on the progress board, puts
/// each finished download where `courier get --background -o FILE` asked (the task's description holds the path;
/// the file is renamed into place complete, or copied beside it and renamed when the folders are on two file
/// systems), and counts what ended. `courier get --background` uses it too, for what ends before it has left.
final class QueueWaitDelegate: NSObject, URLSessionDownloadDelegate, Sendable {
    private struct State {
        var lines: [Int: Int] = [:]
        /// The tasks that ended, by identifier.
        var ended: Set<Int> = []
        var failed = 0
        /// Finished downloads that could not be put where they were asked for.
        var unsaved = 0
        var drained = false
    }

    private let board: ProgressBoard
    private let quiet: Bool
    private let state = NIOLockedValueBox(State())

    init(board: ProgressBoard, quiet: Bool) {
        self.board = board
        self.quiet = quiet
    }

    var completed: Int { state.withLockedValue { $0.ended.count } }
    /// The identifiers of the tasks that ended (each finished download saved, or kept, before).
    var ended: Set<Int> { state.withLockedValue { $0.ended } }
    /// Tasks that failed, and finished downloads that could not be saved.
    var failed: Int { state.withLockedValue { $0.failed + $0.unsaved } }
    var drained: Bool { state.withLockedValue { $0.drained } }

    private func line(for task: URLSessionTask) -> Int {
        state.withLockedValue { state in
            if let line = state.lines[task.taskIdentifier] { return line }
            let url = task.originalRequest?.url.map { $0.textWithoutCredentials() }
            let line = board.add(name: task.taskDescription ?? url ?? "?")
            state.lines[task.taskIdentifier] = line
            return line
        }
    }

    func urlSession(
        _ session: URLSession, downloadTask: URLSessionDownloadTask, didWriteData bytesWritten: Int64,
        totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64
    ) {
        board.update(
            line(for: downloadTask), received: totalBytesWritten,
            total: totalBytesExpectedToWrite > 0 ? totalBytesExpectedToWrite : nil)
    }

    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL) {
        let task = downloadTask.taskIdentifier
        guard let path = downloadTask.taskDescription, path.hasPrefix("/") else {
            unsaved(task, location, why: "it names no file to save to")
            return
        }
        let target = URL(fileURLWithPath: path)
        // A device or a FIFO is not replaced by a file (as root, `-o /dev/null` was); `courier get` writes into
        // those, which a finished background download cannot.
        guard DownloadPlacement.isReplaceable(target) else {
            unsaved(task, location, why: "\(path) is not a regular file")
            return
        }
        do {
            let placed = try DownloadPlacement.place(location, at: target)
            if !quiet { board.message("saved \(placed.path)") }
        } catch {
            unsaved(task, location, why: "cannot save \(path): \(error)")
        }
    }

    /// A finished download that could not be put where it was asked for: the run fails, and the file is kept in
    /// ``unsavedFolder`` (the daemon lets go of it once this method returns, so it would be lost).
    private func unsaved(_ task: Int, _ location: URL, why: String) {
        state.withLockedValue { $0.unsaved += 1 }
        let folder = Self.unsavedFolder
        do {
            try PrivateFolder.prepare(folder, purpose: "folder of unsaved downloads", hint: "")
            let name = "task-\(task)-\(location.lastPathComponent)"
            let kept = try DownloadPlacement.place(location, at: folder.appendingPathComponent(name), replacing: false)
            report("task \(task): \(why); the download is kept at \(kept.path)")
        } catch {
            report("task \(task): \(why); keeping it in \(folder.path) failed too (\(error)): dropped")
        }
    }

    /// Where downloads that could not be saved are kept: `$XDG_DATA_HOME/courier/unsaved/`.
    private static var unsavedFolder: URL { StoreLocation.sharedDataFolder("unsaved") }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let line = line(for: task)
        board.finish(line, succeeded: error == nil, averageRate: nil)
        state.withLockedValue { state in
            state.ended.insert(task.taskIdentifier)
            if error != nil { state.failed += 1 }
        }
        if let error {
            report("task \(task.taskIdentifier) (\(task.taskDescription ?? "")): \(error.localizedDescription)")
        }
    }

    func urlSessionDidFinishEvents(forBackgroundURLSession session: URLSession) {
        state.withLockedValue { $0.drained = true }
    }

    private func report(_ text: String) {
        board.message("courier: \(text)")
    }
}
