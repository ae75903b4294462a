import Foundation

#if canImport(Courier)
    import Courier
#elseif canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The manager as the session's delegate: each event goes to the task's bookkeeping, then to its hook.
extension SessionManager {
    public func urlSession(_ session: URLSession, didBecomeInvalidWithError error: (any Error)?) {
        hooks.sessionDidBecomeInvalid?(session, error)
        NotificationCenter.default.post(name: .courierManagerSessionDidInvalidate, object: session)
    }

    public func urlSession(
        _ session: URLSession, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        if let hook = hooks.sessionDidReceiveChallenge {
            let (disposition, credential) = hook(session, challenge)
            return completionHandler(disposition, credential)
        }
        #if canImport(Courier) || canImport(Security)
            let space = challenge.protectionSpace
            if space.authenticationMethod == NSURLAuthenticationMethodServerTrust, let trust = space.serverTrust {
                // AFNetworking: trusted by the policy, or the challenge is cancelled (the task fails as cancelled).
                guard securityPolicy.evaluateServerTrust(trust, forDomain: space.host) else {
                    return completionHandler(.cancelAuthenticationChallenge, nil)
                }
                return completionHandler(.useCredential, URLCredential(trust: trust))
            }
        #endif
        completionHandler(.performDefaultHandling, nil)
    }

    public func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        guard let hook = hooks.taskDidReceiveChallenge else {
            return completionHandler(.performDefaultHandling, nil)
        }
        let (disposition, credential) = hook(session, task, challenge)
        completionHandler(disposition, credential)
    }

    public func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        guard let hook = hooks.taskWillPerformHTTPRedirection else { return completionHandler(request) }
        completionHandler(hook(session, task, response, request))
    }

    /// AFNetworking's `URLSession:task:needNewBodyStream:`: the hook's stream when set, else the original request's
    /// body stream. AFNetworking gives a copy of that stream; an `InputStream` cannot be copied, so it is given once,
    /// while it has not been opened (the first pass of ``uploadTask(withStreamedRequest:progress:completionHandler:)``,
    /// which asks for its body here from the start).
    public func urlSession(
        _ session: URLSession, task: URLSessionTask,
        needNewBodyStream completionHandler: @escaping @Sendable (InputStream?) -> Void
    ) {
        if let hook = hooks.taskNeedNewBodyStream {
            return completionHandler(hook(session, task))
        }
        let stream = task.originalRequest?.httpBodyStream
        completionHandler(stream?.streamStatus == .notOpen ? stream : nil)
    }

    public func urlSession(
        _ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) {
        delegate(for: task)?.sent(totalBytesSent, of: totalBytesExpectedToSend)
        hooks.taskDidSendBodyData?(session, task, bytesSent, totalBytesSent, totalBytesExpectedToSend)
    }

    public func urlSession(
        _ session: URLSession, task: URLSessionTask, didFinishCollecting metrics: URLSessionTaskMetrics
    ) {
        delegate(for: task)?.metrics = metrics
        hooks.taskDidFinishCollectingMetrics?(session, task, metrics)
    }

    public func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        hooks.taskDidComplete?(session, task, error)
        guard let delegate = removeDelegate(for: task) else {
            post(task, userInfo: error.map { [NotificationKey.error: $0] } ?? [:])
            return
        }
        let serializer = responseSerializer
        let queue = completionQueue ?? .main
        let group = completionGroup
        let outcome = delegate.outcome
        let response = task.response
        let metrics = delegate.metrics
        // Serialization (JSON of any size) runs off the delegate queue, as AFNetworking's processing queue does.
        DispatchQueue.global().async {
            var userInfo: [String: Any] = [NotificationKey.responseSerializer: serializer]
            if let metrics { userInfo[NotificationKey.metrics] = metrics }
            if !outcome.data.isEmpty { userInfo[NotificationKey.responseData] = outcome.data }
            var object: Any?
            var failure = error ?? outcome.moveError
            if let file = outcome.file {
                object = file
                userInfo[NotificationKey.assetPath] = file
            } else if failure == nil, task is URLSessionDownloadTask {
                object = nil
            } else {
                do {
                    object = try serializer.responseObject(for: response, data: outcome.data)
                } catch let serializationError {
                    failure = failure ?? serializationError
                }
            }
            if let object { userInfo[NotificationKey.serializedResponse] = object }
            if let failure { userInfo[NotificationKey.error] = failure }
            let delivery = Delivery(object: object, failure: failure, userInfo: userInfo)
            let deliver: @Sendable () -> Void = {
                delegate.completionHandler?(response, delivery.object, delivery.failure)
                self.post(task, userInfo: delivery.userInfo)
            }
            if let group {
                queue.async(group: group, execute: deliver)
            } else {
                queue.async(execute: deliver)
            }
        }
    }

    private func post(_ task: URLSessionTask, userInfo: [String: Any]) {
        NotificationCenter.default.post(name: .courierManagerTaskDidComplete, object: task, userInfo: userInfo)
    }

    public func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        completionHandler(hooks.dataTaskDidReceiveResponse?(session, dataTask, response) ?? .allow)
    }

    public func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didBecome downloadTask: URLSessionDownloadTask
    ) {
        if let delegate = removeDelegate(for: dataTask) {
            replaceDelegate(for: downloadTask, with: delegate)
        }
        hooks.dataTaskDidBecomeDownloadTask?(session, dataTask, downloadTask)
    }

    /// A data task a ``SessionManagerHooks/dataTaskDidReceiveResponse`` hook answered `.becomeStream` for became
    /// `streamTask`. The data task ends there without a completion, as on Darwin, so its per-task delegate is let go
    /// here: nothing else would ever remove it, and the manager kept it — the completion handler with all it
    /// captures, the progress objects, the body received — for as long as it lived. The stream task is the app's
    /// from here; its completion is posted as for any task the manager did not make.
    public func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didBecome streamTask: URLSessionStreamTask
    ) {
        _ = removeDelegate(for: dataTask)
    }

    public func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        delegate(for: dataTask)?.received(
            data, total: dataTask.countOfBytesReceived, expected: dataTask.countOfBytesExpectedToReceive)
        hooks.dataTaskDidReceiveData?(session, dataTask, data)
    }

    public func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, willCacheResponse proposedResponse: CachedURLResponse,
        completionHandler: @escaping @Sendable (CachedURLResponse?) -> Void
    ) {
        guard let hook = hooks.dataTaskWillCacheResponse else { return completionHandler(proposedResponse) }
        completionHandler(hook(session, dataTask, proposedResponse))
    }

    public func urlSession(
        _ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL
    ) {
        let delegate = delegate(for: downloadTask)
        var moveError: (any Error)?
        if let target = hooks.downloadTaskDidFinishDownloading?(session, downloadTask, location) {
            if let delegate {
                moveError = delegate.move(location, to: target)
            } else {
                do { try FilePlacement.place(location, at: target) } catch { moveError = error }
            }
        } else {
            moveError = delegate?.finishDownloading(downloadTask, to: location)
        }
        if let moveError {
            NotificationCenter.default.post(
                name: .courierManagerDownloadDidFailToMoveFile, object: downloadTask,
                userInfo: [NotificationKey.error: moveError])
        }
    }

    public func urlSession(
        _ session: URLSession, downloadTask: URLSessionDownloadTask, didWriteData bytesWritten: Int64,
        totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64
    ) {
        delegate(for: downloadTask)?.wrote(total: totalBytesWritten, expected: totalBytesExpectedToWrite)
        hooks.downloadTaskDidWriteData?(
            session, downloadTask, bytesWritten, totalBytesWritten, totalBytesExpectedToWrite)
    }

    public func urlSession(
        _ session: URLSession, downloadTask: URLSessionDownloadTask, didResumeAtOffset fileOffset: Int64,
        expectedTotalBytes: Int64
    ) {
        delegate(for: downloadTask)?.wrote(total: fileOffset, expected: expectedTotalBytes)
        hooks.downloadTaskDidResume?(session, downloadTask, fileOffset, expectedTotalBytes)
    }

    public func urlSessionDidFinishEvents(forBackgroundURLSession session: URLSession) {
        hooks.didFinishEventsForBackgroundSession?(session)
    }
}

/// What a completion hands to the completion queue: the serialized object, the error and the notification's user
/// info (the app's values, made on the processing queue and read on the completion queue only).
private struct Delivery: @unchecked Sendable {
    let object: Any?
    let failure: (any Error)?
    let userInfo: [String: Any]
}
