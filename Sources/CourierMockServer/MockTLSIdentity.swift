/// The certificate chain and key an `.https` ``MockServer`` presents instead of its generated self-signed
/// certificate: for tests of chains signed by a test CA, of expired, not-yet-valid or wrong-host certificates.
public struct MockTLSIdentity: Sendable {
    /// The chain, leaf first, each DER encoded.
    public var certificateChainDER: [[UInt8]]
    /// The leaf's private key, PEM encoded (PKCS #8 or SEC 1).
    public var privateKeyPEM: String

    public init(certificateChainDER: [[UInt8]], privateKeyPEM: String) {
        self.certificateChainDER = certificateChainDER
        self.privateKeyPEM = privateKeyPEM
    }
}
