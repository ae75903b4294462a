import Foundation
import SwiftASN1
import X509

/// An X.509 certificate: Courier's Linux stand-in for the Security framework's `SecCertificate`.
///
/// Create one with ``SecCertificateCreateWithData(_:_:)``; read it with ``SecCertificateCopyData(_:)``,
/// ``SecCertificateCopySubjectSummary(_:)`` and ``SecCertificateCopyKey(_:)``.
public final class SecCertificate: Sendable {
    /// The certificate in DER encoding.
    package let derData: Data
    /// The parsed certificate (`nil` only for bytes that are not a certificate, which the public API never makes).
    let parsed: Certificate?

    /// Creates a certificate from its DER encoding.
    ///
    /// - Parameter derData: The DER-encoded certificate.
    package init(derData: Data) {
        self.derData = derData
        self.parsed = try? Certificate(derEncoded: Array(derData))
    }
}

/// Creates a certificate from DER data, or `nil` when the data is not a DER-encoded X.509 certificate.
///
/// Darwin takes a `CFAllocator?` and a `CFData`; pass `nil` and the `Data` (Courier defines `CFData` as `Data` on
/// Linux, so `data as CFData` compiles unchanged; see ``CFData``).
public func SecCertificateCreateWithData(_ allocator: AnyObject?, _ data: Data) -> SecCertificate? {
    let certificate = SecCertificate(derData: data)
    return certificate.parsed == nil ? nil : certificate
}

/// The certificate's DER encoding.
public func SecCertificateCopyData(_ certificate: SecCertificate) -> Data {
    certificate.derData
}

/// A human-readable summary of the certificate's subject: its common name, else its whole distinguished name.
public func SecCertificateCopySubjectSummary(_ certificate: SecCertificate) -> String? {
    guard let subject = certificate.parsed?.subject else { return nil }
    for relativeName in subject {
        for attribute in relativeName where attribute.type == .RDNAttributeType.commonName {
            return String(describing: attribute.value)
        }
    }
    let whole = String(describing: subject)
    return whole.isEmpty ? nil : whole
}

/// The certificate's public key, or `nil` when it cannot be read.
public func SecCertificateCopyKey(_ certificate: SecCertificate) -> SecKey? {
    guard let publicKey = certificate.parsed?.publicKey else { return nil }
    return SecKey(publicKey)
}
