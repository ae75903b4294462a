/// The information needed to evaluate trust in a server: Courier's Linux stand-in for the Security framework's
/// `SecTrust`.
///
/// Trust evaluation functions come in a later release.
public final class SecTrust: Sendable {
    /// The certificate chain the server presented, leaf first.
    package let certificates: [SecCertificate]

    /// The host name the certificates are evaluated against.
    package let host: String

    /// Creates a trust object for a server's certificate chain.
    ///
    /// - Parameters:
    ///   - certificates: The certificate chain, leaf first.
    ///   - host: The host name the chain must be valid for.
    package init(certificates: [SecCertificate], host: String) {
        self.certificates = certificates
        self.host = host
    }
}
