/// The certificate chain and key an `.https` ``MockServer`` presents instead of its generated self-signed
/// certificate: for tests of chains signed by a test CA, of expired, not-yet-valid or wrong-host certificates.
public struct MockTLSIdentity: Sendable {
    /// The chain, leaf first, each DER encoded.
    public var certificateChainDER: [[UInt8]]
    /// The leaf's private key, PEM encoded (PKCS #8 or SEC 1).
    public var privateKeyPEM: String
    /// When not empty, the server asks every client for a certificate, names these CAs (DER) as the acceptable
    /// issuers, and refuses the handshake when none comes or it is not signed by one of them: a server for tests of
    /// client-certificate authentication. ``RecordedRequest/clientCertificateDER`` tells which one came.
    public var requiredClientCertificateAuthoritiesDER: [[UInt8]]

    /// Creates an identity.
    ///
    /// - Parameters:
    ///   - certificateChainDER: The chain, leaf first, each DER encoded.
    ///   - privateKeyPEM: The leaf's private key, PEM encoded.
    ///   - requiredClientCertificateAuthoritiesDER: CAs whose client certificates the server requires; empty (the
    ///     default) asks for none.
    public init(
        certificateChainDER: [[UInt8]], privateKeyPEM: String, requiredClientCertificateAuthoritiesDER: [[UInt8]] = []
    ) {
        self.certificateChainDER = certificateChainDER
        self.privateKeyPEM = privateKeyPEM
        self.requiredClientCertificateAuthoritiesDER = requiredClientCertificateAuthoritiesDER
    }
}
