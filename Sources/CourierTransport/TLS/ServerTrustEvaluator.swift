import CourierHTTP

/// Decides, above the transport, whether to trust a server's certificate chain.
///
/// When a request carries an evaluator, it replaces NIOSSL's built-in verification for the connection: the
/// transport leaves the event loop, awaits the evaluator (which may take as long as it needs, for example to ask
/// a session delegate about a server-trust challenge), and completes the handshake with its answer. The
/// evaluator is responsible for the whole decision, host name included. The connection's handshake timeout still
/// applies, so an evaluator that never answers fails the connection instead of holding it forever.
public protocol ServerTrustEvaluator: AnyObject, Sendable {
    /// `certificateChain` is DER, leaf first, as the server presented it; `host` and `port` are the ones the
    /// request named.
    func evaluate(certificateChain: [[UInt8]], host: String, port: Int) async -> ServerTrustDecision
}

/// An evaluator's answer.
public enum ServerTrustDecision: Sendable, Equatable {
    /// Complete the handshake.
    case trust
    /// Fail the connection with this error (for example `serverCertificateUntrusted`, or `cancelled` when the app
    /// cancelled the challenge); the exchanges waiting for the connection fail with it.
    case reject(TransferError)
}
