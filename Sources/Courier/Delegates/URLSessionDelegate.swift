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
        completionHandler(.performDefaultHandling, nil)
    }

    public func urlSessionDidFinishEvents(forBackgroundURLSession session: URLSession) {}
}
