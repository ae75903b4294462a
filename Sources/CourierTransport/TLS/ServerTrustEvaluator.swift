/// Decides, above the transport, whether to trust a server's certificate chain.
///
/// When a request carries an evaluator, it replaces NIOSSL's built-in verification for the connection: the
/// transport leaves the event loop, awaits the evaluator (which may take as long as it needs, for example to ask
/// a session delegate about a server-trust challenge), and completes the handshake with its answer. The
/// evaluator is responsible for the whole decision, host name included.
public protocol ServerTrustEvaluator: AnyObject, Sendable {
    /// `certificateChain` is DER, leaf first, as the server presented it; `host` is the host the request named.
    func evaluate(certificateChain: [[UInt8]], host: String) async -> Bool
}
