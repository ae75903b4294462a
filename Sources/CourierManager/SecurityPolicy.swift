import Foundation

#if canImport(Courier)
    import Courier
#elseif canImport(FoundationNetworking)
    import FoundationNetworking
#endif

#if canImport(Security)
    import Security
#endif

// Server trust needs Courier's Security functions or Apple's; FoundationNetworking has neither.
#if canImport(Courier) || canImport(Security)

    /// How a ``SecurityPolicy`` pins servers (AFSSLPinningMode).
    public enum SSLPinningMode: Sendable {
        /// No pinning: the system's evaluation decides.
        case none
        /// The server's chain must contain a key of one of the pinned certificates (survives a renewal that keeps the
        /// key).
        case publicKey
        /// The server's chain must lead to, and contain, one of the pinned certificates, which are its anchors.
        case certificate
    }

    /// AFSecurityPolicy: evaluates server trust with optional certificate or public-key pinning. A ``SessionManager``
    /// answers server-trust challenges with its ``SessionManager/securityPolicy``: trusted, or the challenge is
    /// cancelled and the task fails with `URLError(.serverCertificateUntrusted)` carrying the server's trust, as in
    /// AFNetworking.
    ///
    /// ```swift
    /// // AFNetworking: [AFSecurityPolicy policyWithPinningMode:AFSSLPinningModeCertificate withPinnedCertificates:set]
    /// manager.securityPolicy = SecurityPolicy(pinningMode: .certificate, pinnedCertificates: [certificateDER])
    /// ```
    public struct SecurityPolicy: Sendable {
        /// How servers are pinned.
        public let pinningMode: SSLPinningMode
        /// The pinned certificates, DER-encoded.
        public var pinnedCertificates: Set<Data>
        /// Whether a certificate the system does not trust (self-signed, expired, unknown root) is accepted
        /// (default: `false`). It only lifts the system's evaluation: with ``SSLPinningMode/certificate`` the chain
        /// must still be valid with the pinned certificates as its only anchors (so a self-signed server can be
        /// pinned, but an expired certificate is still refused); with ``SSLPinningMode/publicKey`` a pinned key must
        /// still be in the chain. Without it, a pinned server must also be trusted by the system.
        public var allowInvalidCertificates = false
        /// Whether the certificate must name the host (default: `true`). With ``allowInvalidCertificates`` and no
        /// pinning (or no pinned certificates), every server is refused, as in AFNetworking: nothing could vouch for
        /// the name of a certificate the system does not trust; pin the certificate or turn this off.
        public var validatesDomainName = true

        /// A policy with `mode` and `pinnedCertificates`.
        public init(pinningMode mode: SSLPinningMode, pinnedCertificates: Set<Data> = []) {
            pinningMode = mode
            self.pinnedCertificates = pinnedCertificates
        }

        /// AFNetworking's `defaultPolicy`: no pinning, invalid certificates refused, the domain name checked.
        public static var `default`: SecurityPolicy { SecurityPolicy(pinningMode: .none) }

        /// Whether to trust `serverTrust` for `domain` (the challenge's host).
        public func evaluateServerTrust(_ serverTrust: SecTrust, forDomain domain: String?) -> Bool {
            // AFNetworking refuses a policy that would accept anything while claiming to check the name.
            if domain != nil, allowInvalidCertificates, validatesDomainName,
                pinningMode == .none || pinnedCertificates.isEmpty
            {
                return false
            }
            _ = SecTrustSetPolicies(serverTrust, SecPolicyCreateSSL(true, validatesDomainName ? domain : nil))
            let pinned = pinnedCertificates.compactMap { SecCertificateCreateWithData(nil, $0 as CFData) }
            switch pinningMode {
            case .none:
                return allowInvalidCertificates || Self.isValid(serverTrust)
            case .certificate:
                // As in AFNetworking, the chain must first be one the system trusts unless invalid certificates are
                // allowed: a pin narrows the system's trust, it does not replace it.
                if !allowInvalidCertificates, !Self.isValid(serverTrust) { return false }
                guard !pinned.isEmpty else { return false }
                // The pinned certificates are then the only anchors: the chain must lead to one of them, whether or
                // not invalid certificates are allowed.
                _ = SecTrustSetAnchorCertificates(serverTrust, pinned as CFArray)
                _ = SecTrustSetAnchorCertificatesOnly(serverTrust, true)
                guard Self.isValid(serverTrust) else { return false }
                return Self.chain(of: serverTrust).contains {
                    pinnedCertificates.contains(SecCertificateCopyData($0) as Data)
                }
            case .publicKey:
                if !allowInvalidCertificates, !Self.isValid(serverTrust) { return false }
                let pinnedKeys = Set(pinned.compactMap(Self.keyData))
                return Self.chain(of: serverTrust).contains { Self.keyData($0).map(pinnedKeys.contains) ?? false }
            }
        }

        private static func isValid(_ trust: SecTrust) -> Bool {
            SecTrustEvaluateWithError(trust, nil)
        }

        private static func chain(of trust: SecTrust) -> [SecCertificate] {
            (SecTrustCopyCertificateChain(trust) as? [SecCertificate]) ?? []
        }

        private static func keyData(_ certificate: SecCertificate) -> Data? {
            guard let key = SecCertificateCopyKey(certificate) else { return nil }
            return SecKeyCopyExternalRepresentation(key, nil) as Data?
        }
    }
#endif
