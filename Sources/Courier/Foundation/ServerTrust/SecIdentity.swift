import CourierTransport
import Foundation
import NIOSSL

/// A certificate and its private key, for client-certificate authentication: Courier's Linux stand-in for the
/// Security framework's `SecIdentity`.
///
/// Make one from a PKCS #12 archive with ``SecPKCS12Import(_:_:_:)``, as on Darwin, or from PEM text with
/// ``courierIdentity(certificateChainPEM:privateKeyPEM:passphrase:)``; answer a client-certificate challenge with
/// `URLCredential(identity:certificates:persistence:)`. Read its certificate with
/// ``SecIdentityCopyCertificate(_:_:)``. The private key never leaves it: Darwin's `SecIdentityCopyPrivateKey` is
/// not provided, since Courier's ``SecKey`` stands for public keys only.
public final class SecIdentity: Sendable {
    /// The leaf certificate.
    let certificate: SecCertificate
    /// The certificate chain (leaf first) and key, as the transport presents them.
    let clientIdentity: ClientIdentity

    init(chain: [NIOSSLCertificate], privateKey: NIOSSLPrivateKey) throws {
        guard let leaf = chain.first else { throw IdentityError.noCertificate }
        self.certificate = SecCertificate(derData: Data(try leaf.toDERBytes()))
        self.clientIdentity = ClientIdentity(certificateChain: chain, privateKey: privateKey)
    }

    /// Makes an identity from PEM text: a Courier extension, for the certificate and key files that Linux servers
    /// and tools such as `openssl` and `curl --cert/--key` use.
    ///
    /// - Parameters:
    ///   - certificateChainPEM: One or more `CERTIFICATE` blocks, leaf first; intermediates follow it on the wire.
    ///   - privateKeyPEM: The leaf's private key (PKCS #8, SEC 1 or PKCS #1 PEM, encrypted or not).
    ///   - passphrase: The passphrase of an encrypted key.
    /// - Throws: An error that says what could not be read, or that the key is not the certificate's.
    public static func courierIdentity(
        certificateChainPEM: String, privateKeyPEM: String, passphrase: String? = nil
    ) throws -> SecIdentity {
        let chain = try NIOSSLCertificate.fromPEMBytes(Array(certificateChainPEM.utf8))
        let key: NIOSSLPrivateKey
        if let passphrase {
            key = try NIOSSLPrivateKey(bytes: Array(privateKeyPEM.utf8), format: .pem) { setter in
                setter(Array(passphrase.utf8))
            }
        } else {
            key = try NIOSSLPrivateKey(bytes: Array(privateKeyPEM.utf8), format: .pem)
        }
        return try SecIdentity(chain: chain, privateKey: key)
    }

    private enum IdentityError: Error, CustomStringConvertible {
        case noCertificate

        var description: String { "the PEM text holds no certificate" }
    }
}

/// Copies the identity's certificate into `certificateRef`.
@discardableResult
public func SecIdentityCopyCertificate(
    _ identityRef: SecIdentity, _ certificateRef: UnsafeMutablePointer<SecCertificate?>
) -> OSStatus {
    certificateRef.pointee = identityRef.certificate
    return errSecSuccess
}
