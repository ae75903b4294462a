import Foundation

/// An X.509 certificate: Courier's Linux stand-in for the Security framework's `SecCertificate`.
///
/// Functions to create and inspect certificates come in a later release.
public final class SecCertificate: Sendable {
    /// The certificate in DER encoding.
    package let derData: Data

    /// Creates a certificate from its DER encoding.
    ///
    /// - Parameter derData: The DER-encoded certificate.
    package init(derData: Data) {
        self.derData = derData
    }
}
