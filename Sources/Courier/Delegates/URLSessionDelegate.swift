import Foundation

/// Session-level events: invalidation, connection-level authentication, background event delivery.
///
/// As on Darwin, every method is optional: the protocol extension gives Darwin's default behaviour. Courier
/// calls these methods on the session's `delegateQueue`.
public protocol URLSessionDelegate: NSObjectProtocol, Sendable {
    /// The session was invalidated; the session releases its delegate after this call returns.
    func urlSession(_ session: URLSession, didBecomeInvalidWithError error: (any Error)?)

    /// A connection-level challenge (server trust, client certificate, NTLM, Negotiate).
    func urlSession(
        _ session: URLSession,
        didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    )

    /// The async form of the connection-level challenge. Courier asks this one; its default asks the completion
    /// handler form on the delegate queue, so an app implements whichever it prefers.
    func urlSession(
        _ session: URLSession,
        didReceive challenge: URLAuthenticationChallenge
    ) async -> (URLSession.AuthChallengeDisposition, URLCredential?)

    /// All events queued for a background session have been delivered.
    func urlSessionDidFinishEvents(forBackgroundURLSession session: URLSession)
}

extension URLSessionDelegate {
    public func urlSession(_ session: URLSession, didBecomeInvalidWithError error: (any Error)?) {}

    public func urlSession(
        _ session: URLSession,
        didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        // Darwin: a session delegate without this method leaves connection-level challenges to the delegate of the
        // task the connection is for (`urlSession(_:task:didReceive:completionHandler:)`, the task's own delegate
        // first), which is where delegates such as Alamofire's evaluate server trust.
        guard let task = challenge.connectionTask, let delegate = task.resolvedDelegate(URLSessionTaskDelegate.self)
        else {
            return completionHandler(.performDefaultHandling, nil)
        }
        delegate.urlSession(session, task: task, didReceive: challenge, completionHandler: completionHandler)
    }

    public func urlSession(
        _ session: URLSession,
        didReceive challenge: URLAuthenticationChallenge
    ) async -> (URLSession.AuthChallengeDisposition, URLCredential?) {
        // Not the other way round (a completion form that awaits this one): that would cost every delegate a Task
        // for a method it did not implement. The first answer counts, as with every completion handler.
        await withCheckedContinuation { continuation in
            session.dispatcher.async {
                let once = CompletionOnce()
                self.urlSession(session, didReceive: challenge) { disposition, credential in
                    guard once.claim() else { return }
                    continuation.resume(returning: (disposition, credential))
                }
            }
        }
    }

    public func urlSessionDidFinishEvents(forBackgroundURLSession session: URLSession) {}
}
