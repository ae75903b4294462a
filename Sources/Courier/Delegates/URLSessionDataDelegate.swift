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

    /// The async form of the response decision. Implement either form; the completion-handler form's default
    /// calls this one, whose default allows the transfer.
    func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        didReceive response: URLResponse
    ) async -> URLSession.ResponseDisposition

    /// The async form of `willCacheResponse`; the default keeps the proposed response.
    func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        willCacheResponse proposedResponse: CachedURLResponse
    ) async -> CachedURLResponse?

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
        // Darwin code may implement the async form only: ask it.
        Task { completionHandler(await self.urlSession(session, dataTask: dataTask, didReceive: response)) }
    }

    public func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        didReceive response: URLResponse
    ) async -> URLSession.ResponseDisposition {
        guard let fallback = dataTask.sessionFallback(from: self, as: URLSessionDataDelegate.self) else {
            return .allow
        }
        return await dataTask.askSessionDelegate { answer in
            fallback.urlSession(session, dataTask: dataTask, didReceive: response) { answer($0) }
        }
    }

    public func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        willCacheResponse proposedResponse: CachedURLResponse
    ) async -> CachedURLResponse? {
        guard let fallback = dataTask.sessionFallback(from: self, as: URLSessionDataDelegate.self) else {
            return proposedResponse
        }
        return await dataTask.askSessionDelegate { answer in
            fallback.urlSession(session, dataTask: dataTask, willCacheResponse: proposedResponse) { answer($0) }
        }
    }

    public func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        didBecome downloadTask: URLSessionDownloadTask
    ) {
        dataTask.sessionFallback(from: self, as: URLSessionDataDelegate.self)?.urlSession(
            session, dataTask: dataTask, didBecome: downloadTask)
    }

    public func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didBecome streamTask: URLSessionStreamTask
    ) {
        dataTask.sessionFallback(from: self, as: URLSessionDataDelegate.self)?.urlSession(
            session, dataTask: dataTask, didBecome: streamTask)
    }

    public func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        dataTask.sessionFallback(from: self, as: URLSessionDataDelegate.self)?.urlSession(
            session, dataTask: dataTask, didReceive: data)
    }

    public func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        willCacheResponse proposedResponse: CachedURLResponse,
        completionHandler: @escaping @Sendable (CachedURLResponse?) -> Void
    ) {
        Task {
            completionHandler(await self.urlSession(session, dataTask: dataTask, willCacheResponse: proposedResponse))
        }
    }
}
