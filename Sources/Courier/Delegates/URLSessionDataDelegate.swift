import Foundation

/// Events of data and upload tasks.
public protocol URLSessionDataDelegate: URLSessionTaskDelegate {
    /// The response head arrived; decide whether the transfer goes on.
    func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    )

    /// The data task became a download task (after `.becomeDownload`).
    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didBecome downloadTask: URLSessionDownloadTask)

    /// The data task became a stream task (after `.becomeStream`).
    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didBecome streamTask: URLSessionStreamTask)

    /// A part of the body arrived.
    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data)

    /// The response may be cached; call the handler with the response to store, or `nil`.
    func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        willCacheResponse proposedResponse: CachedURLResponse,
        completionHandler: @escaping @Sendable (CachedURLResponse?) -> Void
    )
}

extension URLSessionDataDelegate {
    public func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        completionHandler(.allow)
    }

    public func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        didBecome downloadTask: URLSessionDownloadTask
    ) {}

    public func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didBecome streamTask: URLSessionStreamTask
    ) {}

    public func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {}

    public func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        willCacheResponse proposedResponse: CachedURLResponse,
        completionHandler: @escaping @Sendable (CachedURLResponse?) -> Void
    ) {
        completionHandler(proposedResponse)
    }
}
