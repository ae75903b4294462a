import Foundation

/// The result of ``SecTrustEvaluate(_:_:)``, as Darwin's `SecTrustResultType`.
public enum SecTrustResultType: UInt32, Sendable {
    /// The evaluation did not run.
    case invalid = 0
    /// The user chose to trust the chain (Darwin's keychain settings; Courier never gives it).
    case proceed = 1
    /// Deprecated on Darwin; never given.
    case confirm = 2
    /// The user chose not to trust the chain (never given).
    case deny = 3
    /// The chain is trusted by the default settings.
    case unspecified = 4
    /// The chain is not trusted as it is (an unknown root, a bad date, another host).
    case recoverableTrustFailure = 5
    /// The chain cannot be trusted however it is set (never given: Courier reports every failure as recoverable).
    case fatalTrustFailure = 6
    /// The evaluation failed for another reason (never given).
    case otherError = 7
}

/// Evaluates the chain as ``SecTrustEvaluateWithError(_:_:)`` does and reports the outcome as a result type:
/// `.unspecified` when trusted, `.recoverableTrustFailure` when not. Returns `errSecSuccess` (the evaluation ran).
///
/// Darwin deprecates it (macOS 10.15, iOS 13) in favour of ``SecTrustEvaluateWithError(_:_:)``; code that calls it
/// in the `else` branch of an availability check still has to compile, which is why Courier has it.
@available(*, deprecated, message: "use SecTrustEvaluateWithError")
public func SecTrustEvaluate(_ trust: SecTrust, _ result: UnsafeMutablePointer<SecTrustResultType>) -> OSStatus {
    result.pointee = SecTrustEvaluateWithError(trust, nil) ? .unspecified : .recoverableTrustFailure
    return errSecSuccess
}

/// The certificate at `ix` in the chain ``SecTrustCopyCertificateChain(_:)`` returns (leaf first), or `nil` past
/// its end. Deprecated on Darwin (macOS 12, iOS 15) for ``SecTrustCopyCertificateChain(_:)``.
@available(*, deprecated, message: "use SecTrustCopyCertificateChain")
public func SecTrustGetCertificateAtIndex(_ trust: SecTrust, _ ix: Int) -> SecCertificate? {
    let chain = SecTrustCopyCertificateChain(trust) as? [SecCertificate] ?? []
    return chain.indices.contains(ix) ? chain[ix] : nil
}

/// The leaf certificate's public key, as ``SecTrustCopyKey(_:)``. Deprecated on Darwin (macOS 11, iOS 14).
@available(*, deprecated, message: "use SecTrustCopyKey")
public func SecTrustCopyPublicKey(_ trust: SecTrust) -> SecKey? {
    SecTrustCopyKey(trust)
}

/// The basic X.509 policy: the chain must lead to a trusted root and be valid now; no host name is checked (the SSL
/// policy without one).
public func SecPolicyCreateBasicX509() -> SecPolicy {
    SecPolicy(server: true, hostname: nil)
}

/// Keys compare by their bytes (Darwin's `CFEqual`), so a pinned key is found in a set of keys.
extension SecKey: Hashable {
    public static func == (lhs: SecKey, rhs: SecKey) -> Bool {
        lhs.externalRepresentation == rhs.externalRepresentation
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(externalRepresentation)
    }
}

/// Certificates compare by their DER encoding (Darwin's `CFEqual`), so a pinned certificate is found in a chain.
extension SecCertificate: Hashable {
    public static func == (lhs: SecCertificate, rhs: SecCertificate) -> Bool {
        lhs.derData == rhs.derData
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(derData)
    }
}
