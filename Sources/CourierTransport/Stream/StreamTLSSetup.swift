import NIOCore

/// How a ``StreamConnection`` starts TLS on its live connection (STARTTLS): the same settings, trust evaluation and
/// client certificates as the session's HTTPS connections. The server name (SNI, and the name the certificate must
/// match) is the connection's host.
public struct StreamTLSSetup: Sendable {
    /// Versions, trusted certificates and client identity. Stream connections offer no ALPN protocol.
    public var settings: TLSSettings
    /// Decides about the server's chain in place of NIOSSL's own verification (a session delegate's server-trust
    /// challenge); `nil` for NIOSSL's verification against the system's and the settings' roots.
    public var trustEvaluator: (any ServerTrustEvaluator)?
    /// Chooses the client certificate when the server asks for one; `nil` for the settings' identity, if any.
    public var clientCertificateProvider: (any ClientCertificateProvider)?
    /// How long the handshake may take.
    public var handshakeTimeout: TimeAmount

    /// Creates a setup.
    public init(
        settings: TLSSettings,
        trustEvaluator: (any ServerTrustEvaluator)?,
        clientCertificateProvider: (any ClientCertificateProvider)?,
        handshakeTimeout: TimeAmount
    ) {
        var settings = settings
        settings.applicationProtocols = .none
        self.settings = settings
        self.trustEvaluator = trustEvaluator
        self.clientCertificateProvider = clientCertificateProvider
        self.handshakeTimeout = handshakeTimeout
    }
}
