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

    /// AFNetworking answers connection-level challenges at the session level only for a
    /// ``SessionManagerHooks/sessionDidReceiveChallenge`` hook (its `respondsToSelector:` hides the method otherwise);
    /// without one they go to ``urlSession(_:task:didReceive:completionHandler:)`` for the task the connection is
    /// opened for, as Darwin routes them for a session delegate without this method, so that a server the
    /// ``securityPolicy`` refuses fails that task with its own error.
    public func urlSession(
        _ session: URLSession, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        if let hook = hooks.sessionDidReceiveChallenge {
            let (disposition, credential) = hook(session, challenge)
            return completionHandler(disposition, credential)
        }
        // Courier's routing for a delegate without the session-level method finds the task, and its own delegate
        // when it has one, else this manager.
        TaskLevelChallengeRouting().urlSession(session, didReceive: challenge) { disposition, credential in
            #if canImport(Courier) || canImport(Security)
                // Default handling here means no task was found (or a task's own delegate left it to the default):
                // the policy still decides, so that no connection escapes it.
                if disposition == .performDefaultHandling, let trust = SessionManager.serverTrust(of: challenge) {
                    guard self.securityPolicy.evaluateServerTrust(trust, forDomain: challenge.protectionSpace.host)
                    else { return completionHandler(.cancelAuthenticationChallenge, nil) }
                    return completionHandler(.useCredential, URLCredential(trust: trust))
                }
            #endif
            completionHandler(disposition, credential)
        }
    }

    /// AFNetworking's task-level challenge handling: the ``SessionManagerHooks/taskDidReceiveChallenge`` hook answers
    /// when set; a server-trust challenge it leaves to default handling (or every one, without a hook) is answered by
    /// the ``securityPolicy``. A refused server cancels the challenge and the task fails with
    /// `URLError(.serverCertificateUntrusted)` carrying the server's trust
    /// (`NSURLErrorFailingURLPeerTrustErrorKey`) and the URL, not as cancelled.
    public func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        var answer: SessionManagerHooks.ChallengeAnswer = (.performDefaultHandling, nil)
        if let hook = hooks.taskDidReceiveChallenge {
            answer = hook(session, task, challenge)
        }
        #if canImport(Courier) || canImport(Security)
            if answer.0 == .performDefaultHandling, let trust = Self.serverTrust(of: challenge) {
                if securityPolicy.evaluateServerTrust(trust, forDomain: challenge.protectionSpace.host) {
                    answer = (.useCredential, URLCredential(trust: trust))
                } else {
                    // The cancellation fails the task; its completion reports this error instead.
                    delegate(for: task)?.challengeError = Self.serverTrustError(trust, url: task.currentRequest?.url)
                    answer = (.cancelAuthenticationChallenge, nil)
                }
            }
        #endif
        completionHandler(answer.0, answer.1)
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
        let challengeError = delegate.challengeError
        let response = task.response
        let metrics = delegate.metrics
        // Serialization (JSON of any size) runs off the delegate queue, as AFNetworking's processing queue does.
        DispatchQueue.global().async {
            var userInfo: [String: Any] = [NotificationKey.responseSerializer: serializer]
            if let metrics { userInfo[NotificationKey.metrics] = metrics }
            if !outcome.data.isEmpty { userInfo[NotificationKey.responseData] = outcome.data }
            var object: Any?
            var failure = challengeError ?? error ?? outcome.moveError
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

#if canImport(Courier) || canImport(Security)
    extension SessionManager {
        /// The server's trust when `challenge` is a server-trust challenge.
        fileprivate static func serverTrust(of challenge: URLAuthenticationChallenge) -> SecTrust? {
            let space = challenge.protectionSpace
            return space.authenticationMethod == NSURLAuthenticationMethodServerTrust ? space.serverTrust : nil
        }

        /// The error of a server the policy refused (AFNetworking's `serverTrustErrorForServerTrust:url:`): Darwin's
        /// untrusted-certificate error, with the trust and the URL.
        static func serverTrustError(_ trust: SecTrust, url: URL?) -> URLError {
            let host = url?.host(percentEncoded: false) ?? ""
            let description =
                "The certificate for this server is invalid. You might be connecting to a server that is pretending "
                + "to be \u{201C}\(host)\u{201D} which could put your confidential information at risk."
            var userInfo: [String: Any] = [
                NSLocalizedDescriptionKey: description,
                NSURLErrorFailingURLPeerTrustErrorKey: trust,
            ]
            if let url {
                userInfo[NSURLErrorFailingURLErrorKey] = url
                // Darwin's `NSURLErrorFailingURLStringErrorKey`, deprecated in swift-corelibs-foundation.
                userInfo["NSErrorFailingURLStringKey"] = url.absoluteString
            }
            return URLError(.serverCertificateUntrusted, userInfo: userInfo)
        }
    }
#endif

/// A session delegate without the session-level challenge method: asked through it, Courier's default routing puts
/// a connection-level challenge to the task-level method of the task the connection is opened for (see
/// ``SessionManager/urlSession(_:didReceive:completionHandler:)``).
private final class TaskLevelChallengeRouting: NSObject, URLSessionDelegate, Sendable {}

/// What a completion hands to the completion queue: the serialized object, the error and the notification's user
/// info (the app's values, made on the processing queue and read on the completion queue only).
private struct Delivery: @unchecked Sendable {
    let object: Any?
    let failure: (any Error)?
    let userInfo: [String: Any]
}
