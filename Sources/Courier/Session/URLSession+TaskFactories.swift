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

    /// Creates a task that uploads `bodyData` with `request` (whose own body is ignored).
    public func uploadTask(with request: URLRequest, from bodyData: Data) -> URLSessionUploadTask {
        makeUpload(request, body: .data(bodyData), mode: .delegate)
    }

    /// Creates a task that uploads `bodyData`; its outcome goes to `completionHandler`.
    public func uploadTask(
        with request: URLRequest,
        from bodyData: Data?,
        completionHandler: @escaping @Sendable (Data?, URLResponse?, (any Error)?) -> Void
    ) -> URLSessionUploadTask {
        makeUpload(request, body: .data(bodyData ?? Data()), mode: .dataHandler(completionHandler))
    }

    /// Creates a task that uploads the file at `fileURL`, streamed from disk.
    public func uploadTask(with request: URLRequest, fromFile fileURL: URL) -> URLSessionUploadTask {
        makeUpload(request, body: .file(fileURL), mode: .delegate)
    }

    /// Creates a task that uploads the file at `fileURL`; its outcome goes to `completionHandler`.
    public func uploadTask(
        with request: URLRequest,
        fromFile fileURL: URL,
        completionHandler: @escaping @Sendable (Data?, URLResponse?, (any Error)?) -> Void
    ) -> URLSessionUploadTask {
        makeUpload(request, body: .file(fileURL), mode: .dataHandler(completionHandler))
    }

    /// Creates a task whose body comes from the stream the delegate gives in `needNewBodyStream`, asked for the
    /// first pass and again whenever the body must be sent again.
    public func uploadTask(withStreamedRequest request: URLRequest) -> URLSessionUploadTask {
        makeUpload(request, body: .streamed, mode: .delegate)
    }

    func makeUpload(_ request: URLRequest, body: UploadBody, mode: TaskCompletionMode) -> URLSessionUploadTask {
        register {
            URLSessionUploadTask(
                session: self, request: request, identifier: $0, completionMode: mode, uploadBody: body)
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
                completionMode: .downloadHandler(completionHandler)
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

    /// Creates a download task that resumes from `resumeData` (as produced by `cancel(byProducingResumeData:)`
    /// or found in a failed download's error). Invalid resume data makes the task fail when resumed.
    public func downloadTask(withResumeData resumeData: Data) -> URLSessionDownloadTask {
        makeResumedDownload(resumeData, mode: .delegate)
    }

    /// Creates a download task that resumes from `resumeData`; its outcome goes to `completionHandler`.
    public func downloadTask(
        withResumeData resumeData: Data,
        completionHandler: @escaping @Sendable (URL?, URLResponse?, (any Error)?) -> Void
    ) -> URLSessionDownloadTask {
        makeResumedDownload(resumeData, mode: .downloadHandler(completionHandler))
    }

    func makeResumedDownload(_ resumeData: Data, mode: TaskCompletionMode) -> URLSessionDownloadTask {
        let resume = DownloadResumeState.decode(resumeData)
        let request = resume.request ?? URLRequest(url: URL(fileURLWithPath: "/"))
        return register {
            URLSessionDownloadTask(
                session: self, request: request, identifier: $0, completionMode: mode, resume: resume)
        }
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
