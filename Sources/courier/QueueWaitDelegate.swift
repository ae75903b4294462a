import Courier
import CourierHTTP
import Foundation
import NIOConcurrencyHelpers

/// The delegate of `courier queue wait`: shows each transfer of the background session on the progress board, puts
/// each finished download where `courier get --background -o FILE` asked (the task's description holds the path;
/// the file is renamed into place complete, or copied beside it and renamed when the folders are on two file
/// systems), and counts what ended.
final class QueueWaitDelegate: NSObject, URLSessionDownloadDelegate, Sendable {
    private struct State {
        var lines: [Int: Int] = [:]
        var completed = 0
        var failed = 0
        var drained = false
    }

    private let board: ProgressBoard
    private let quiet: Bool
    private let state = NIOLockedValueBox(State())

    init(board: ProgressBoard, quiet: Bool) {
        self.board = board
        self.quiet = quiet
    }

    var completed: Int { state.withLockedValue { $0.completed } }
    var failed: Int { state.withLockedValue { $0.failed } }
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
        guard let path = downloadTask.taskDescription, path.hasPrefix("/") else {
            report("task \(downloadTask.taskIdentifier): finished, but it names no file to save to; dropped")
            return
        }
        do {
            let placed = try DownloadPlacement.place(location, at: URL(fileURLWithPath: path))
            if !quiet { board.message("saved \(placed.path)") }
        } catch {
            report("task \(downloadTask.taskIdentifier): cannot save \(path): \(error)")
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let line = line(for: task)
        board.finish(line, succeeded: error == nil, averageRate: nil)
        state.withLockedValue { state in
            state.completed += 1
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
