import BenchmarkCore
import Courier
import Foundation

/// Scenario (l): a download through a background session, as an app writes it — `background(withIdentifier:)`, a
/// download task, the file taken in `didFinishDownloadingTo`. The transfer runs in `courierd` (started by the first
/// run when none is running, then reused, as a system's daemon is); the clock covers `resume()` to the completion.
final class BackgroundDownloader: NSObject, URLSessionDownloadDelegate, @unchecked Sendable {
    private let scratch: URL
    private var session: URLSession!
    private let lock = NSLock()
    private var waiting: CheckedContinuation<Outcome, any Error>?
    private var file: URL?

    init(scratch: URL) async {
        self.scratch = scratch
        super.init()
        let configuration = URLSessionConfiguration.background(withIdentifier: "courier-bench")
        configuration.timeoutIntervalForResource = 600
        configuration.sessionSendsLaunchEvents = false
        // Attaching waits for the daemon: off the Swift concurrency threads, and before the clock starts.
        session = await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(
                    returning: URLSession(configuration: configuration, delegate: self, delegateQueue: nil))
            }
        }
    }

    func download(_ url: URL) async throws -> Outcome {
        try await withCheckedThrowingContinuation { continuation in
            lock.withLock { waiting = continuation }
            session.downloadTask(with: url).resume()
        }
    }

    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL) {
        let target = scratch.appendingPathComponent("background-\(UUID().uuidString)")
        do {
            try FileManager.default.moveItem(at: location, to: target)
            lock.withLock { file = target }
        } catch {
            lock.withLock { file = nil }
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let (continuation, file) = lock.withLock {
            defer { waiting = nil }
            return (waiting, self.file)
        }
        if let error {
            continuation?.resume(throwing: error)
            return
        }
        let size = (try? FileManager.default.attributesOfItem(atPath: file?.path ?? "")[.size] as? Int64) ?? -1
        let status = (task.response as? HTTPURLResponse)?.statusCode ?? 0
        continuation?.resume(returning: Outcome(status: status, bytes: size, file: file))
    }

    func shutdown() {
        session.finishTasksAndInvalidate()
    }
}

extension URLSessionClient {
    func backgroundDownload(_ url: URL) async throws -> Outcome {
        guard let background else { throw UsageError(message: "the client was not made for scenario l") }
        return try await background.download(url)
    }
}
