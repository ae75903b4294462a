import Foundation
import NIOConcurrencyHelpers

/// The information needed to evaluate trust in a server: Courier's Linux stand-in for the Security framework's
/// `SecTrust`.
///
/// A server-trust challenge's `protectionSpace.serverTrust` is one. Read it with ``SecTrustGetCertificateCount(_:)``,
/// ``SecTrustCopyCertificateChain(_:)`` and ``SecTrustCopyKey(_:)``; adjust it with
/// ``SecTrustSetAnchorCertificates(_:_:)``, ``SecTrustSetAnchorCertificatesOnly(_:_:)`` and
/// ``SecTrustSetPolicies(_:_:)``; evaluate it with ``SecTrustEvaluateWithError(_:_:)``.
public final class SecTrust: Sendable {
    /// The certificate chain the server presented, leaf first.
    package let certificates: [SecCertificate]

    /// The host name the certificates are evaluated against (the SSL policy's, until policies are set).
    package var host: String { settings.withLockedValue { $0.policy.hostname } ?? "" }

    struct Settings {
        var policy: SecPolicy
        /// Certificates to trust as roots (``SecTrustSetAnchorCertificates(_:_:)``).
        var anchors: [SecCertificate]?
        /// Whether only the anchors are trusted; Darwin's default is `true` once anchors are set.
        var anchorsOnly: Bool?
        /// Roots the session trusts besides the system's (`courierAdditionalTrustedCertificates`).
        var additionalRoots: [SecCertificate] = []
        /// The chain the last successful evaluation built, leaf to anchor (the anchor included even when the server
        /// did not send it, as Darwin's evaluated chain); `nil` before one, and again once a setting changed.
        var evaluatedChain: [SecCertificate]?
        /// Counts the changes of the settings, so that an evaluation that ran on older ones records no chain.
        var revision = 0

        /// Applies a change of what the evaluation depends on: the previous evaluation no longer holds.
        mutating func change(_ body: (inout Settings) -> Void) {
            body(&self)
            evaluatedChain = nil
            revision += 1
        }
    }

    let settings: NIOLockedValueBox<Settings>

    /// Creates a trust object for a server's certificate chain.
    ///
    /// - Parameters:
    ///   - certificates: The certificate chain, leaf first.
    ///   - host: The host name the chain must be valid for.
    package init(certificates: [SecCertificate], host: String) {
        self.certificates = certificates
        self.settings = NIOLockedValueBox(Settings(policy: SecPolicy(server: true, hostname: host)))
    }

    init(certificates: [SecCertificate], policy: SecPolicy, additionalRoots: [SecCertificate] = []) {
        self.certificates = certificates
        self.settings = NIOLockedValueBox(Settings(policy: policy, additionalRoots: additionalRoots))
    }
}

/// A trust policy: Courier's Linux stand-in for the Security framework's `SecPolicy`. Only the SSL policy exists.
public final class SecPolicy: Sendable {
    /// Whether the policy checks a server's certificate (`true`) or a client's.
    let isServer: Bool
    /// The name the leaf certificate must be valid for; `nil` checks the chain only.
    let hostname: String?

    init(server: Bool, hostname: String?) {
        self.isServer = server
        self.hostname = hostname
    }
}

/// A result code of the Security functions (`0` is success).
public typealias OSStatus = Int32
/// Success.
public let errSecSuccess: OSStatus = 0
/// One or more parameters were not valid.
public let errSecParam: OSStatus = -50

/// The SSL policy: evaluates a server's chain for `hostname` (DNS or IP subject alternative names), or a chain
/// alone when `hostname` is `nil`.
public func SecPolicyCreateSSL(_ server: Bool, _ hostname: String?) -> SecPolicy {
    SecPolicy(server: server, hostname: hostname)
}

/// Creates a trust object for `certificates` (a ``SecCertificate`` or an array of them, leaf first) and `policies`
/// (a ``SecPolicy``, an array of them, or `nil` for the SSL policy without a host name).
public func SecTrustCreateWithCertificates(
    _ certificates: Any, _ policies: Any?, _ trust: UnsafeMutablePointer<SecTrust?>
) -> OSStatus {
    let chain: [SecCertificate]
    if let one = certificates as? SecCertificate {
        chain = [one]
    } else if let many = (certificates as? [Any])?.compactMap({ $0 as? SecCertificate }), !many.isEmpty,
        many.count == (certificates as? [Any])?.count
    {
        chain = many
    } else {
        return errSecParam
    }
    guard let policy = firstPolicy(policies) else { return errSecParam }
    trust.pointee = SecTrust(certificates: chain, policy: policy ?? SecPolicy(server: true, hostname: nil))
    return errSecSuccess
}

/// The number of certificates in the chain ``SecTrustCopyCertificateChain(_:)`` returns.
public func SecTrustGetCertificateCount(_ trust: SecTrust) -> Int {
    certificateChain(of: trust).count
}

/// The certificate chain, leaf first, as an array of ``SecCertificate``. After a successful
/// ``SecTrustEvaluateWithError(_:_:)`` it is the evaluated chain, as on Darwin: leaf to the anchor it leads to, the
/// anchor included even when the server did not send it (a root pinned by certificate or key is found there: servers
/// usually leave their root out). Otherwise it is the leaf and the presented certificates that issue it in turn (by
/// name and signature). A certificate the server sent that issued none of them is left out: anyone can append a
/// pinned (public) certificate to their own chain.
///
/// As on Darwin the result is a `CFArray?` (an `[Any]?` on Linux, see ``CFData``): read it with
/// `as? [SecCertificate]`.
public func SecTrustCopyCertificateChain(_ trust: SecTrust) -> CFArray? {
    certificateChain(of: trust)
}

/// The evaluated chain when the current settings were evaluated successfully, else the presented chain that issues
/// the leaf.
private func certificateChain(of trust: SecTrust) -> [SecCertificate] {
    trust.settings.withLockedValue { $0.evaluatedChain } ?? TrustEvaluation.issuedChain(trust.certificates)
}

/// The leaf certificate's public key.
public func SecTrustCopyKey(_ trust: SecTrust) -> SecKey? {
    trust.certificates.first.flatMap(SecCertificateCopyKey)
}

/// Trusts `anchorCertificates` as roots. As on Darwin, the system's roots are then no longer trusted, unless
/// ``SecTrustSetAnchorCertificatesOnly(_:_:)`` is called with `false`.
///
/// Darwin takes a `CFArray`; an array of ``SecCertificate`` (or `[...] as CFArray`) is accepted.
@discardableResult
public func SecTrustSetAnchorCertificates(_ trust: SecTrust, _ anchorCertificates: Any) -> OSStatus {
    guard let anchors = anchorCertificates as? [SecCertificate] else { return errSecParam }
    trust.settings.withLockedValue { settings in settings.change { $0.anchors = anchors } }
    return errSecSuccess
}

/// Whether only the anchor certificates are trusted (`true`), or the system's roots too (`false`).
@discardableResult
public func SecTrustSetAnchorCertificatesOnly(_ trust: SecTrust, _ anchorCertificatesOnly: Bool) -> OSStatus {
    trust.settings.withLockedValue { settings in settings.change { $0.anchorsOnly = anchorCertificatesOnly } }
    return errSecSuccess
}

/// Replaces the policies the chain is evaluated against: a ``SecPolicy`` or an array of them (the first is used:
/// Courier has the SSL policy only).
@discardableResult
public func SecTrustSetPolicies(_ trust: SecTrust, _ policies: Any) -> OSStatus {
    guard let policy = firstPolicy(policies), let policy else { return errSecParam }
    trust.settings.withLockedValue { settings in settings.change { $0.policy = policy } }
    return errSecSuccess
}

/// Evaluates the chain: it must lead to a trusted root (the anchors, or the system's roots and the session's
/// `courierAdditionalTrustedCertificates`), every certificate must be valid now, and the leaf must be valid for
/// the policy's host name. On failure, `error` gets an `NSError` in `NSURLErrorDomain` whose code is the
/// `URLError` Darwin reports for it (`serverCertificateHasBadDate`, `serverCertificateNotYetValid`,
/// `serverCertificateHasUnknownRoot`, `serverCertificateUntrusted`).
///
/// Darwin's `error` is an `UnsafeMutablePointer<CFError?>?`; on Linux declare it `NSError?` (`CFError` bridges to
/// `NSError` on Darwin, so `var error: NSError?` is the one-line change).
public func SecTrustEvaluateWithError(_ trust: SecTrust, _ error: UnsafeMutablePointer<NSError?>?) -> Bool {
    guard let failure = TrustEvaluation.evaluateBlocking(trust) else {
        error?.pointee = nil
        return true
    }
    error?.pointee = NSError(
        domain: NSURLErrorDomain, code: failure.urlErrorCode.rawValue,
        userInfo: [NSLocalizedDescriptionKey: failure.description])
    return false
}

/// `nil` (no policy given: the default), the policy, or `.none` for something that is not a policy.
private func firstPolicy(_ policies: Any?) -> SecPolicy?? {
    guard let policies else { return .some(nil) }
    if let one = policies as? SecPolicy { return one }
    if let many = policies as? [SecPolicy] { return many.first.map { .some($0) } ?? .some(nil) }
    return .none
}
