import Foundation

/// A task that writes the body to a temporary file.
///
/// - Note: Downloads land with the transfers release; until then a resumed download task completes with
///   `URLError(.unsupportedURL)` naming the missing feature.
open class URLSessionDownloadTask: URLSessionTask, @unchecked Sendable {
    /// Cancels the download; the handler receives resume data when the download can be resumed, else `nil`.
    open func cancel(byProducingResumeData completionHandler: @escaping @Sendable (Data?) -> Void) {
        cancel()
        session.dispatcher.async { completionHandler(nil) }
    }

    override var unsupportedReason: String? { "download tasks are not supported yet (a later Courier release)" }
}
