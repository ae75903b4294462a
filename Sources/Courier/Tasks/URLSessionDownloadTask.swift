import CourierHTTP
import Foundation

/// A task that streams the body into a temporary file, handed to `didFinishDownloadingTo` (and deleted when it
/// returns) or to a completion handler.
open class URLSessionDownloadTask: URLSessionTask, @unchecked Sendable {
    /// Cancels the download; the handler receives resume data when the download can be resumed, else `nil`.
    /// Resume data this task was created from, if any.
    let resume: DownloadResumeState?

    init(
        session: URLSession,
        request: URLRequest,
        identifier: Int,
        completionMode: TaskCompletionMode,
        resume: DownloadResumeState? = nil
    ) {
        self.resume = resume
        super.init(session: session, request: request, identifier: identifier, completionMode: completionMode)
    }

    /// Cancels the download. The handler (on the delegate queue) receives resume data when the download can be
    /// resumed — a GET whose server sent a strong `ETag` or `Last-Modified` and accepts byte ranges, with bytes
    /// already written — else `nil`. The partial file is kept for resuming only when resume data is produced.
    open func cancel(byProducingResumeData completionHandler: @escaping @Sendable (Data?) -> Void) {
        let action = mutable.withLock { $0.lifecycle.cancel() }
        switch action {
        case .cancelTransfer:
            let (engine, adapter) = mutable.withLock { ($0.engine, $0.adapter) }
            if let background = session.backgroundClient, let adapter {
                adapter.setResumeDataHandler(completionHandler)
                background.send(.cancel(task: taskIdentifier, producingResumeData: true))
            } else if let engine, let adapter {
                adapter.setResumeDataHandler(completionHandler)
                engine.cancel(producingResumeData: true)
            } else {
                session.dispatcher.async { completionHandler(nil) }
            }
        case .completeWithoutTransfer:
            complete(with: URLErrorMapping.urlError(.cancelled, failingURL: originalRequest?.url), body: nil)
            session.dispatcher.async { completionHandler(nil) }
        default:
            session.dispatcher.async { completionHandler(nil) }
        }
    }

    /// Cancels the download and returns its resume data, or `nil` when it cannot be resumed (see
    /// ``cancel(byProducingResumeData:)``).
    open func cancelByProducingResumeData() async -> Data? {
        await withCheckedContinuation { continuation in
            cancel { continuation.resume(returning: $0) }
        }
    }

}
