import CourierHTTP
import Foundation
import SwiftASN1
import X509

/// Courier's default server-trust evaluation, on swift-certificates: the chain must lead to a trusted root, every
/// certificate must be valid at the time of evaluation (RFC 5280 rules, basic constraints and key usage included),
/// and the leaf must be valid for the host (DNS or IP subject alternative names).
///
/// The answer is the `TransferError` Darwin's `URLError` code corresponds to, or `nil` when the chain is trusted.
enum TrustEvaluation {
    /// Evaluates `trust` now.
    static func evaluate(_ trust: SecTrust, now: Date = Date()) async -> TransferError? {
        let settings = trust.settings.withLockedValue { $0 }
        let chain = trust.certificates.compactMap(\.parsed)
        guard chain.count == trust.certificates.count, let leaf = chain.first else {
            return .serverCertificateUntrusted("the server's certificate chain cannot be parsed")
        }
        // The leaf is in every path; the other certificates count only when they are in the path to a trusted root.
        if let failure = dateFailure(of: [leaf], now: now) { return failure }
        // Darwin's SSL policy: a server's leaf whose extended key usage is present must allow TLS servers (a
        // certificate issued for client authentication only is no server's).
        if settings.policy.isServer, !allowsServerAuthentication(leaf) {
            return .serverCertificateUntrusted("the server's certificate is not for TLS servers (extended key usage)")
        }
        let roots = TrustRootStore(settings)
        let intermediates = CertificateStore(chain.dropFirst())
        let host = settings.policy.hostname ?? ""
        // One path search when the chain is good: the chain and the host checked together. Only a failure searches
        // again, for the chain alone, to tell a certificate for another host from an untrusted chain (both searches
        // accept the same critical extensions, so they build the same paths).
        if !host.isEmpty {
            let isIP = IPAddress.isLiteral(host)
            var verifier = Verifier(rootCertificates: CertificateStore(custom: roots)) {
                RFC5280Policy()
                ServerIdentityPolicy(serverHostname: isIP ? nil : host, serverIP: isIP ? host : nil)
            }
            if case .validCertificate(let verified) = await verifier.validate(leaf: leaf, intermediates: intermediates)
            {
                record(Array(verified), of: trust, evaluatedWith: settings)
                return nil
            }
        }
        var chainVerifier = Verifier(rootCertificates: CertificateStore(custom: roots)) {
            RFC5280Policy()
            SubjectAlternativeNamesRead()
        }
        let chainResult = await chainVerifier.validate(leaf: leaf, intermediates: intermediates)
        guard case .validCertificate(let verified) = chainResult else {
            // No valid path: a certificate out of its dates among those the server sent is the likely reason, which
            // Darwin reports with its own codes. Only here: a valid path (the verifier checked the dates of its
            // certificates) is not spoiled by an expired certificate the server sends but the path does not use,
            // such as an expired cross-signing root (many servers sent AddTrust's after it expired in 2020).
            if let failure = dateFailure(of: chain, now: now) { return failure }
            // A leaf that is itself an anchor (`SecTrustSetAnchorCertificates` with the server's own certificate, as
            // certificate pinning does) is trusted as it stands, as on Darwin, even when it is no CA that a chain
            // could be built from: only its names are checked.
            if settings.anchors?.contains(where: { $0.derData == trust.certificates.first?.derData }) == true {
                let mismatch = hostMismatch(leaf: leaf, settings: settings)
                if mismatch == nil { record([leaf], of: trust, evaluatedWith: settings) }
                return mismatch
            }
            // A self-signed server certificate is untrusted (−1202), as on Darwin; a chain that ends in a root nobody
            // trusts has an unknown root (−1203).
            let top = chain.last ?? leaf
            if chain.count > 1, top.issuer == top.subject, !roots.containsRoot(top) {
                return .serverCertificateHasUnknownRoot(
                    "the server's certificate chain ends in a root that is not trusted (\(top.subject))")
            }
            return .serverCertificateUntrusted("the server's certificate chain is not trusted")
        }
        // The chain alone is good, so the host was what failed above.
        guard host.isEmpty else {
            return .serverCertificateUntrusted("the server's certificate is not valid for \(host)")
        }
        record(Array(verified), of: trust, evaluatedWith: settings)
        return nil
    }

    /// Keeps `chain` (leaf to anchor) as the evaluated chain ``SecTrustCopyCertificateChain(_:)`` returns, unless the
    /// trust's settings changed while it was evaluated. Certificates the trust holds are reused; a system root is
    /// encoded anew.
    private static func record(_ chain: [Certificate], of trust: SecTrust, evaluatedWith settings: SecTrust.Settings) {
        let known = trust.certificates + (settings.anchors ?? []) + settings.additionalRoots
        let certificates = chain.compactMap { certificate -> SecCertificate? in
            if let same = known.first(where: { $0.parsed == certificate }) { return same }
            var serializer = DER.Serializer()
            do { try serializer.serialize(certificate) } catch { return nil }
            return SecCertificate(derData: Data(serializer.serializedBytes))
        }
        guard certificates.count == chain.count else { return }
        trust.settings.withLockedValue { current in
            if current.revision == settings.revision { current.evaluatedChain = certificates }
        }
    }

    /// The error for the first of `certificates` that has expired or is not yet valid at `now`, if any.
    private static func dateFailure(of certificates: [Certificate], now: Date) -> TransferError? {
        if let expired = certificates.first(where: { $0.notValidAfter < now }) {
            return .serverCertificateHasBadDate("a certificate of the server expired on \(expired.notValidAfter)")
        }
        if let early = certificates.first(where: { $0.notValidBefore > now }) {
            return .serverCertificateNotYetValid("a certificate of the server is valid from \(early.notValidBefore)")
        }
        return nil
    }

    /// Whether `leaf` may authenticate a TLS server: no extended key usage, or one that names `serverAuth` or
    /// `anyExtendedKeyUsage`. An extension that cannot be read allows nothing.
    static func allowsServerAuthentication(_ leaf: Certificate) -> Bool {
        do {
            guard let usages = try leaf.extensions.extendedKeyUsage else { return true }
            return usages.contains(.serverAuth) || usages.contains(.any)
        } catch {
            return false
        }
    }

    /// Whether an anchored leaf fails the host check: a DNS name (by ``CertificateHostName``, for a DNS host) or
    /// an IP address among its subject alternative names must match the host.
    private static func hostMismatch(leaf: Certificate, settings: SecTrust.Settings) -> TransferError? {
        guard let host = settings.policy.hostname?.lowercased(), !host.isEmpty else { return nil }
        let names = (try? leaf.extensions.subjectAlternativeNames) ?? nil
        let hostBytes = IPAddress.bytes(host)
        let matches = names?.contains { name in
            switch name {
            case .dnsName(let pattern):
                // An IP address host is matched against IP address entries only (a DNS entry "127.0.0.1" is no
                // proof for the address), a DNS host by the rules of `CertificateHostName`.
                return hostBytes == nil && CertificateHostName.matches(pattern: String(pattern), host: host)
            case .ipAddress(let address):
                return hostBytes.map { $0 == Array(address.bytes) } ?? false
            default:
                return false
            }
        }
        return matches == true ? nil : .serverCertificateUntrusted("the server's certificate is not valid for \(host)")
    }

    /// ``evaluate(_:now:)`` for synchronous callers (``SecTrustEvaluateWithError(_:_:)``). The evaluation runs on
    /// Courier's own executor, not the cooperative pool, so a caller blocking a cooperative thread cannot starve it.
    static func evaluateBlocking(_ trust: SecTrust) -> TransferError? {
        let done = DispatchSemaphore(value: 0)
        let result = ResultBox()
        Task(executorPreference: StageExecutor.shared) {
            result.value = await evaluate(trust)
            done.signal()
        }
        done.wait()
        return result.value
    }

    /// The leaf of `certificates`, then each certificate among them that issued the one before (its subject is the
    /// issuer's name and its key verifies the signature), until none does. Certificates off that path are dropped.
    static func issuedChain(_ certificates: [SecCertificate]) -> [SecCertificate] {
        guard let leaf = certificates.first else { return [] }
        var chain = [leaf]
        var remaining = Array(certificates.dropFirst())
        while let current = chain.last?.parsed, current.issuer != current.subject || chain.count == 1,
            let next = remaining.firstIndex(where: { candidate in
                guard let issuer = candidate.parsed else { return false }
                return issuer.subject == current.issuer
                    && issuer.publicKey.isValidSignature(current.signature, for: current)
            })
        {
            chain.append(remaining.remove(at: next))
        }
        return chain
    }

    /// Carries the result out of the task; written once before the semaphore is signalled.
    private final class ResultBox: @unchecked Sendable {
        var value: TransferError?
    }
}

/// Tells the verifier that a critical subject alternative names extension is understood, as the host's policy does,
/// for the search without a host (no host given, or the one that tells a certificate for another host from an
/// untrusted chain). RFC 5280 §4.2.1.6 makes the extension critical in a certificate whose subject is empty; Darwin
/// reads it, and without a host there is no name to check.
private struct SubjectAlternativeNamesRead: VerifierPolicy {
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = [.X509ExtensionID.subjectAlternativeName]

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) -> PolicyEvaluationResult {
        .meetsPolicy
    }
}

/// Whether a host string is an IP address literal.
private enum IPAddress {
    static func isLiteral(_ host: String) -> Bool {
        bytes(host) != nil
    }

    /// The address's bytes in network order (4 for IPv4, 16 for IPv6), or `nil` for a name.
    static func bytes(_ host: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, host, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }
}

/// The system's trusted root certificates, read once from the distribution's bundle.
enum SystemTrustRoots {
    /// Where Linux distributions keep the bundle: Debian and Ubuntu, Fedora and RHEL, openSUSE, Alpine.
    static let bundlePaths = [
        "/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/ca-bundle.pem",
        "/etc/ssl/cert.pem",
    ]

    static let certificates: [Certificate] = {
        for path in bundlePaths {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8),
                let documents = try? PEMDocument.parseMultiple(pemString: text)
            else { continue }
            let roots = documents.compactMap { try? Certificate(pemDocument: $0) }
            if !roots.isEmpty { return roots }
        }
        return []
    }()

    /// ``certificates`` by subject, as the verifier looks roots up: built once, not for every evaluation.
    static let bySubject = Dictionary(grouping: certificates, by: \.subject)
}
