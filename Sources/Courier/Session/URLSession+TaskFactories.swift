import CourierHTTP
import Foundation

extension URLSession {
    /// Creates a task, registers it, and tells the delegate (synchronously, as Darwin does).
    func register<T: URLSessionTask>(_ make: (Int) -> T) -> T {
        let task = make(registry.nextIdentifier())
        if registry.insert(task) {
            (delegate as? any URLSessionTaskDelegate)?.urlSession(self, didCreateTask: task)
        } else {
            task.createdOnInvalidSession.withLockedValue { $0 = true }
            logger.warning("task created on an invalidated session", metadata: ["task": "\(task.taskIdentifier)"])
        }
        return task
    }

    // MARK: - Data tasks

    /// Creates a data task for `request`; events go to the delegate.
    public func dataTask(with request: URLRequest) -> URLSessionDataTask {
        register { URLSessionDataTask(session: self, request: request, identifier: $0, completionMode: .delegate) }
    }

    /// Creates a data task for a GET of `url`; events go to the delegate.
    public func dataTask(with url: URL) -> URLSessionDataTask {
        dataTask(with: URLRequest(url: url))
    }

    /// Creates a data task whose outcome goes to `completionHandler` on the delegate queue.
    public func dataTask(
        with request: URLRequest,
        completionHandler: @escaping @Sendable (Data?, URLResponse?, (any Error)?) -> Void
    ) -> URLSessionDataTask {
        register {
            URLSessionDataTask(
                session: self,
                request: request,
                identifier: $0,
                completionMode: .dataHandler(completionHandler)
            )
        }
    }

    /// Creates a data task for a GET of `url` whose outcome goes to `completionHandler`.
    public func dataTask(
        with url: URL,
        completionHandler: @escaping @Sendable (Data?, URLResponse?, (any Error)?) -> Void
    ) -> URLSessionDataTask {
        dataTask(with: URLRequest(url: url), completionHandler: completionHandler)
    }

    // MARK: - Upload tasks

    /// Creates a task that uploads `bodyData` with `request`.
    public func uploadTask(with request: URLRequest, from bodyData: Data) -> URLSessionUploadTask {
        makeUpload(request, body: bodyData, mode: .delegate)
    }

    /// Creates a task that uploads `bodyData`; its outcome goes to `completionHandler`.
    public func uploadTask(
        with request: URLRequest,
        from bodyData: Data?,
        completionHandler: @escaping @Sendable (Data?, URLResponse?, (any Error)?) -> Void
    ) -> URLSessionUploadTask {
        makeUpload(request, body: bodyData ?? Data(), mode: .dataHandler(completionHandler))
    }

    /// Creates a task that uploads the file at `fileURL`.
    ///
    /// - Note: File uploads stream from disk in the transfers release; until then the task completes with
    ///   `URLError(.unsupportedURL)`.
    public func uploadTask(with request: URLRequest, fromFile fileURL: URL) -> URLSessionUploadTask {
        makeUnsupportedUpload(request, mode: .delegate, reason: "uploads from a file are not supported yet")
    }

    /// Creates a task that uploads the file at `fileURL`; its outcome goes to `completionHandler`.
    public func uploadTask(
        with request: URLRequest,
        fromFile fileURL: URL,
        completionHandler: @escaping @Sendable (Data?, URLResponse?, (any Error)?) -> Void
    ) -> URLSessionUploadTask {
        makeUnsupportedUpload(
            request,
            mode: .dataHandler(completionHandler),
            reason: "uploads from a file are not supported yet"
        )
    }

    /// Creates a task whose body comes from the stream the delegate gives in `needNewBodyStream`.
    public func uploadTask(withStreamedRequest request: URLRequest) -> URLSessionUploadTask {
        makeUnsupportedUpload(request, mode: .delegate, reason: "streamed uploads are not supported yet")
    }

    private func makeUpload(_ request: URLRequest, body: Data, mode: TaskCompletionMode) -> URLSessionUploadTask {
        var withBody = request
        withBody.httpBody = body
        return register { URLSessionUploadTask(session: self, request: withBody, identifier: $0, completionMode: mode) }
    }

    private func makeUnsupportedUpload(
        _ request: URLRequest,
        mode: TaskCompletionMode,
        reason: String
    ) -> URLSessionUploadTask {
        register {
            UnsupportedUploadTask(session: self, request: request, identifier: $0, completionMode: mode, reason: reason)
        }
    }

    // MARK: - Download tasks

    /// Creates a download task for `request`.
    public func downloadTask(with request: URLRequest) -> URLSessionDownloadTask {
        register { URLSessionDownloadTask(session: self, request: request, identifier: $0, completionMode: .delegate) }
    }

    /// Creates a download task for a GET of `url`.
    public func downloadTask(with url: URL) -> URLSessionDownloadTask {
        downloadTask(with: URLRequest(url: url))
    }

    /// Creates a download task whose outcome goes to `completionHandler`.
    public func downloadTask(
        with request: URLRequest,
        completionHandler: @escaping @Sendable (URL?, URLResponse?, (any Error)?) -> Void
    ) -> URLSessionDownloadTask {
        register {
            URLSessionDownloadTask(
                session: self,
                request: request,
                identifier: $0,
                completionMode: .dataHandler { _, response, error in completionHandler(nil, response, error) }
            )
        }
    }

    /// Creates a download task for a GET of `url` whose outcome goes to `completionHandler`.
    public func downloadTask(
        with url: URL,
        completionHandler: @escaping @Sendable (URL?, URLResponse?, (any Error)?) -> Void
    ) -> URLSessionDownloadTask {
        downloadTask(with: URLRequest(url: url), completionHandler: completionHandler)
    }

    /// Creates a download task that resumes from `resumeData`.
    public func downloadTask(withResumeData resumeData: Data) -> URLSessionDownloadTask {
        downloadTask(with: URLRequest(url: URL(fileURLWithPath: "/")))
    }

    /// Creates a download task that resumes from `resumeData`; its outcome goes to `completionHandler`.
    public func downloadTask(
        withResumeData resumeData: Data,
        completionHandler: @escaping @Sendable (URL?, URLResponse?, (any Error)?) -> Void
    ) -> URLSessionDownloadTask {
        downloadTask(with: URLRequest(url: URL(fileURLWithPath: "/")), completionHandler: completionHandler)
    }

    // MARK: - Stream and WebSocket tasks

    /// Creates a stream task to `hostname`:`port`.
    public func streamTask(withHostName hostname: String, port: Int) -> URLSessionStreamTask {
        register { URLSessionStreamTask(session: self, hostName: hostname, port: port, identifier: $0) }
    }

    /// Creates a WebSocket task for `url`.
    public func webSocketTask(with url: URL) -> URLSessionWebSocketTask {
        webSocketTask(with: URLRequest(url: url))
    }

    /// Creates a WebSocket task for `url` offering `protocols`.
    public func webSocketTask(with url: URL, protocols: [String]) -> URLSessionWebSocketTask {
        var request = URLRequest(url: url)
        request.setValue(protocols.joined(separator: ", "), forHTTPHeaderField: "Sec-WebSocket-Protocol")
        return webSocketTask(with: request)
    }

    /// Creates a WebSocket task for `request`.
    public func webSocketTask(with request: URLRequest) -> URLSessionWebSocketTask {
        register {
            URLSessionWebSocketTask(session: self, request: request, identifier: $0, completionMode: .delegate)
        }
    }
}

/// An upload kind that is declared but not implemented yet: it completes with `URLError(.unsupportedURL)`.
final class UnsupportedUploadTask: URLSessionUploadTask, @unchecked Sendable {
    private let reason: String

    init(session: URLSession, request: URLRequest, identifier: Int, completionMode: TaskCompletionMode, reason: String)
    {
        self.reason = reason
        super.init(session: session, request: request, identifier: identifier, completionMode: completionMode)
    }

    override var unsupportedReason: String? { "\(reason) (a later Courier release)" }
}
