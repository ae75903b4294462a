import Courier
import Foundation
import NIOConcurrencyHelpers

/// An upload from a file, started with a completion handler that records how it ended.
final class RecordedUpload: Sendable {
    let task: URLSessionUploadTask
    /// Opens when the completion handler ran.
    let finished = AsyncGate()
    private let outcome: NIOLockedValueBox<(status: Int?, error: (any Error)?)>

    /// Makes the task and resumes it; `received` sees the response's body.
    init(
        _ request: URLRequest, fromFile file: URL, in session: URLSession,
        received: @escaping @Sendable (Data?) -> Void = { _ in }
    ) {
        let outcome = NIOLockedValueBox<(status: Int?, error: (any Error)?)>((nil, nil))
        let finished = self.finished
        task = session.uploadTask(with: request, fromFile: file) { data, response, error in
            received(data)
            outcome.withLockedValue { $0 = ((response as? HTTPURLResponse)?.statusCode, error) }
            finished.open()
        }
        self.outcome = outcome
        task.resume()
    }

    /// The response's status code, once finished.
    var statusCode: Int? { outcome.withLockedValue { $0.status } }
    /// The task's error, once finished.
    var error: (any Error)? { outcome.withLockedValue { $0.error } }

    /// Waits until the bytes sent stopped growing after some were sent: the socket buffers are full (the server
    /// reads nothing), and a part of the body waits in the channel. Returns at once if the task completed (the
    /// caller's expectations then fail rather than the wait never ending).
    func waitUntilSendingStalls() async throws {
        var last: Int64 = -1
        while task.countOfBytesSent != last || last <= 0, task.state != .completed {
            last = task.countOfBytesSent
            try await Task.sleep(for: .milliseconds(300))
        }
    }
}
