import Foundation

/// Events common to every kind of task.
///
/// Set one on a session, or on a single task through ``URLSessionTask/delegate`` (a task-specific delegate
/// receives the task's events in place of the session delegate when it adopts the protocol that declares them).
public protocol URLSessionTaskDelegate: URLSessionDelegate {
    /// A task was created. Called synchronously on the creating thread, before the factory method returns; for an
    /// async call (`data(for:delegate:)` and the others) on its `delegate` first, before the task is resumed.
    func urlSession(_ session: URLSession, didCreateTask task: URLSessionTask)

    /// A task with an `earliestBeginDate` is about to start.
    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willBeginDelayedRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLSession.DelayedRequestDisposition, URLRequest?) -> Void
    )

    /// The task waits for connectivity (`waitsForConnectivity`).
    func urlSession(_ session: URLSession, taskIsWaitingForConnectivity task: URLSessionTask)

    /// The server redirected; call the handler with the request to follow, or `nil` to stop and deliver the
    /// redirect response itself.
    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    )

    /// The async form of the redirect decision; the default follows the redirect.
    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest
    ) async -> URLRequest?

    /// The async form of the delayed-start decision; the default continues loading.
    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willBeginDelayedRequest request: URLRequest
    ) async -> (URLSession.DelayedRequestDisposition, URLRequest?)

    /// The async form of `needNewBodyStream`; the default gives none.
    func urlSession(_ session: URLSession, needNewBodyStreamForTask task: URLSessionTask) async -> InputStream?

    /// The async form of the task-level challenge; the default performs default handling.
    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        didReceive challenge: URLAuthenticationChallenge
    ) async -> (URLSession.AuthChallengeDisposition, URLCredential?)

    /// A request-level authentication challenge (or a connection-level one the session delegate does not take).
    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    )

    /// The task needs a (new) body stream for an upload created with a streamed request.
    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        needNewBodyStream completionHandler: @escaping @Sendable (InputStream?) -> Void
    )

    /// The task needs a body stream starting at `offset`.
    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        needNewBodyStreamFrom offset: Int64,
        completionHandler: @escaping @Sendable (InputStream?) -> Void
    )

    /// Body bytes were sent.
    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        didSendBodyData bytesSent: Int64,
        totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    )

    /// A 1xx informational response arrived.
    func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceiveInformationalResponse response: HTTPURLResponse)

    /// The task's metrics are final.
    func urlSession(_ session: URLSession, task: URLSessionTask, didFinishCollecting metrics: URLSessionTaskMetrics)

    /// The task finished: `error` is `nil` on success. Server errors (4xx, 5xx) are responses, not errors.
    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?)
}

extension URLSessionTaskDelegate {
    public func urlSession(_ session: URLSession, didCreateTask task: URLSessionTask) {
        task.sessionFallback(from: self, as: URLSessionTaskDelegate.self)?.urlSession(session, didCreateTask: task)
    }

    public func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willBeginDelayedRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLSession.DelayedRequestDisposition, URLRequest?) -> Void
    ) {
        Task {
            let (disposition, request) = await self.urlSession(session, task: task, willBeginDelayedRequest: request)
            completionHandler(disposition, request)
        }
    }

    public func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willBeginDelayedRequest request: URLRequest
    ) async -> (URLSession.DelayedRequestDisposition, URLRequest?) {
        guard let fallback = task.sessionFallback(from: self, as: URLSessionTaskDelegate.self) else {
            return (.continueLoading, nil)
        }
        return await task.askSessionDelegate { answer in
            fallback.urlSession(session, task: task, willBeginDelayedRequest: request) { answer(($0, $1)) }
        }
    }

    public func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest
    ) async -> URLRequest? {
        guard let fallback = task.sessionFallback(from: self, as: URLSessionTaskDelegate.self) else { return request }
        return await task.askSessionDelegate { answer in
            fallback.urlSession(session, task: task, willPerformHTTPRedirection: response, newRequest: request) {
                answer($0)
            }
        }
    }

    public func urlSession(_ session: URLSession, needNewBodyStreamForTask task: URLSessionTask) async -> InputStream? {
        guard let fallback = task.sessionFallback(from: self, as: URLSessionTaskDelegate.self) else { return nil }
        let box: InputStreamBox? = await task.askSessionDelegate { answer in
            fallback.urlSession(session, task: task) { answer($0.map(InputStreamBox.init)) }
        }
        return box?.stream
    }

    public func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        didReceive challenge: URLAuthenticationChallenge
    ) async -> (URLSession.AuthChallengeDisposition, URLCredential?) {
        guard let fallback = task.sessionFallback(from: self, as: URLSessionTaskDelegate.self) else {
            return (.performDefaultHandling, nil)
        }
        return await task.askSessionDelegate { answer in
            fallback.urlSession(session, task: task, didReceive: challenge) { answer(($0, $1)) }
        }
    }

    public func urlSession(_ session: URLSession, taskIsWaitingForConnectivity task: URLSessionTask) {
        task.sessionFallback(from: self, as: URLSessionTaskDelegate.self)?.urlSession(
            session, taskIsWaitingForConnectivity: task)
    }

    public func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        Task {
            completionHandler(
                await self.urlSession(session, task: task, willPerformHTTPRedirection: response, newRequest: request)
            )
        }
    }

    public func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        Task {
            let (disposition, credential) = await self.urlSession(session, task: task, didReceive: challenge)
            completionHandler(disposition, credential)
        }
    }

    public func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        needNewBodyStream completionHandler: @escaping @Sendable (InputStream?) -> Void
    ) {
        Task {
            let stream = await self.urlSession(session, needNewBodyStreamForTask: task)
            completionHandler(stream)
        }
    }

    public func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        needNewBodyStreamFrom offset: Int64,
        completionHandler: @escaping @Sendable (InputStream?) -> Void
    ) {
        guard let fallback = task.sessionFallback(from: self, as: URLSessionTaskDelegate.self) else {
            return completionHandler(nil)
        }
        fallback.urlSession(session, task: task, needNewBodyStreamFrom: offset, completionHandler: completionHandler)
    }

    public func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        didSendBodyData bytesSent: Int64,
        totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) {
        task.sessionFallback(from: self, as: URLSessionTaskDelegate.self)?.urlSession(
            session, task: task, didSendBodyData: bytesSent, totalBytesSent: totalBytesSent,
            totalBytesExpectedToSend: totalBytesExpectedToSend)
    }

    public func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        didReceiveInformationalResponse response: HTTPURLResponse
    ) {
        task.sessionFallback(from: self, as: URLSessionTaskDelegate.self)?.urlSession(
            session, task: task, didReceiveInformationalResponse: response)
    }

    public func urlSession(
        _ session: URLSession, task: URLSessionTask, didFinishCollecting metrics: URLSessionTaskMetrics
    ) {
        task.sessionFallback(from: self, as: URLSessionTaskDelegate.self)?.urlSession(
            session, task: task, didFinishCollecting: metrics)
    }

    public func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        task.sessionFallback(from: self, as: URLSessionTaskDelegate.self)?.urlSession(
            session, task: task, didCompleteWithError: error)
    }
}
