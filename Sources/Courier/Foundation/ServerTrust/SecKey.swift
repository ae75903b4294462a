import Foundation
import X509

/// A public key: Courier's Linux stand-in for the Security framework's `SecKey` (public keys of certificates only).
public final class SecKey: Sendable {
    /// The key as Darwin's `SecKeyCopyExternalRepresentation` gives it: the `subjectPublicKey` bits of the
    /// certificate's SubjectPublicKeyInfo — the uncompressed point (`04 || X || Y`, ANSI X9.63) for an elliptic
    /// curve key, the PKCS #1 `RSAPublicKey` for RSA — so the usual SPKI-pinning code (a fixed ASN.1 header for the
    /// key type, then SHA-256) gives the same hashes as on Darwin.
    let externalRepresentation: Data

    init(_ publicKey: Certificate.PublicKey) {
        self.externalRepresentation = Data(publicKey.subjectPublicKeyInfoBytes)
    }
}

/// The key's bytes in Darwin's external representation (see ``SecKey``); never fails for a certificate's key.
///
/// Darwin's `error` is an `UnsafeMutablePointer<Unmanaged<CFError>?>?`; callers pass `nil` in practice, which
/// compiles unchanged.
public func SecKeyCopyExternalRepresentation(_ key: SecKey, _ error: UnsafeMutablePointer<NSError?>?) -> Data? {
    key.externalRepresentation
}
