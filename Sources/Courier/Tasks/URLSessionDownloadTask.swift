import Foundation

/// A task that streams the body into a temporary file, handed to `didFinishDownloadingTo` (and deleted when it
/// returns) or to a completion handler.
open class URLSessionDownloadTask: URLSessionTask, @unchecked Sendable {
    /// Cancels the download; the handler receives resume data when the download can be resumed, else `nil`.
    open func cancel(byProducingResumeData completionHandler: @escaping @Sendable (Data?) -> Void) {
        cancel()
        session.dispatcher.async { completionHandler(nil) }
    }

}
