import Foundation
import Synchronization

/// A data task that sends a body given apart from the request (data, a file or a stream). The request's own
/// `httpBody` and `httpBodyStream` are ignored, as on Darwin.
open class URLSessionUploadTask: URLSessionDataTask, @unchecked Sendable {
    /// The body given apart from the request. The engine takes its own copy when it is made; the bytes of a `Data`
    /// body are let go once the task ended (it stays `.data`, empty), so that a completed task the app keeps does not
    /// keep the whole upload in memory: as on Darwin, neither `originalRequest` nor `currentRequest` carries it, and
    /// only a request that may still be sent (a retry, a 307 or 308 redirect, an authentication challenge) needs it.
    var uploadBody: UploadBody { storedUploadBody.withLock { $0 } }
    private let storedUploadBody: Mutex<UploadBody>

    init(
        session: URLSession,
        request: URLRequest,
        identifier: Int,
        completionMode: TaskCompletionMode,
        uploadBody: UploadBody
    ) {
        self.storedUploadBody = Mutex(uploadBody)
        super.init(session: session, request: request, identifier: identifier, completionMode: completionMode)
    }

    // Before the completion is delivered: the app may look for the bytes to be gone as soon as it hears of it.
    override func complete(with error: (any Error)?, body: Data?, file: URL? = nil) {
        releaseUploadData()
        super.complete(with: error, body: body, file: file)
    }

    // A task that became a download (or stream) task sends nothing more.
    override func endSilently(removeFromSession: Bool = true) {
        releaseUploadData()
        super.endSilently(removeFromSession: removeFromSession)
    }

    /// Lets go of a `Data` body's bytes (the engine, which sends them, holds its own copy until it ends). A file or a
    /// stream body is only a reference: it is kept, and the background client still tells the kinds apart.
    private func releaseUploadData() {
        let released: Data? = storedUploadBody.withLock { body in
            guard case .data(let data) = body, !data.isEmpty else { return nil }
            body = .data(Data())
            return data
        }
        // The last reference to the bytes, if it is one, goes after the lock is released.
        withExtendedLifetime(released) {}
    }

    /// Cancels the upload, producing data to resume it where supported (not yet: the handler gets `nil`).
    open func cancel(byProducingResumeData completionHandler: @escaping @Sendable (Data?) -> Void) {
        cancel()
        session.dispatcher.async { completionHandler(nil) }
    }

    /// Cancels the upload; resumable uploads are not supported yet, so the result is always `nil` (as Darwin's
    /// for a server that does not offer them).
    open func cancelByProducingResumeData() async -> Data? {
        await withCheckedContinuation { continuation in
            cancel { continuation.resume(returning: $0) }
        }
    }

    override var progressTracksReceivedBytes: Bool { false }
}
