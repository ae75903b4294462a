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

    override var progressTracksReceivedBytes: Bool { false }
}
