import Foundation

/// A data task that sends a body given apart from the request (data, a file or a stream). The request's own
/// `httpBody` and `httpBodyStream` are ignored, as on Darwin.
open class URLSessionUploadTask: URLSessionDataTask, @unchecked Sendable {
    /// The body given apart from the request.
    let uploadBody: UploadBody

    init(
        session: URLSession,
        request: URLRequest,
        identifier: Int,
        completionMode: TaskCompletionMode,
        uploadBody: UploadBody
    ) {
        self.uploadBody = uploadBody
        super.init(session: session, request: request, identifier: identifier, completionMode: completionMode)
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
