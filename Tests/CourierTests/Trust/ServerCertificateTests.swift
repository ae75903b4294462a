import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

/// Courier's default evaluation over loopback TLS: a server whose chain a test CA signs, trusted through
/// `courierAdditionalTrustedCertificates`, and the ways a certificate goes wrong. Sessions with a delegate evaluate on
/// swift-certificates and give Darwin's specific codes; sessions without one verify with NIOSSL, which agrees on
/// what to refuse but reports every refusal as `serverCertificateUntrusted` (BoringSSL's reason is not exposed).
@Suite("Server certificates")
struct ServerCertificateTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let dnsNames: [String]
        let ipAddresses: [[UInt8]]
        let validFrom: TimeInterval
        let validUntil: TimeInterval
        let trustsCA: Bool
        /// nil: the request succeeds.
        let delegateCode: URLError.Code?
        let plainCode: URLError.Code?
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(
            name: "valid", dnsNames: ["localhost"], ipAddresses: [[127, 0, 0, 1]], validFrom: -3600, validUntil: 86_400,
            trustsCA: true, delegateCode: nil, plainCode: nil),
        Case(
            name: "expired", dnsNames: ["localhost"], ipAddresses: [[127, 0, 0, 1]], validFrom: -7200,
            validUntil: -3600, trustsCA: true, delegateCode: .serverCertificateHasBadDate,
            plainCode: .serverCertificateUntrusted),
        Case(
            name: "not yet valid", dnsNames: ["localhost"], ipAddresses: [[127, 0, 0, 1]], validFrom: 3600,
            validUntil: 7200, trustsCA: true, delegateCode: .serverCertificateNotYetValid,
            plainCode: .serverCertificateUntrusted),
        Case(
            name: "wrong host", dnsNames: ["elsewhere.test"], ipAddresses: [[10, 0, 0, 1]], validFrom: -3600,
            validUntil: 86_400, trustsCA: true, delegateCode: .serverCertificateUntrusted,
            plainCode: .serverCertificateUntrusted),
        Case(
            name: "unknown CA", dnsNames: ["localhost"], ipAddresses: [[127, 0, 0, 1]], validFrom: -3600,
            validUntil: 86_400, trustsCA: false, delegateCode: .serverCertificateHasUnknownRoot,
            plainCode: .serverCertificateUntrusted),
    ]

    @Test(arguments: cases)
    func defaultEvaluationOverLoopback(_ check: Case) async throws {
        let authority = try TestCertificateAuthority()
        let identity = try authority.serverIdentity(
            dnsNames: check.dnsNames, ipAddresses: check.ipAddresses, validFrom: check.validFrom,
            validUntil: check.validUntil)
        try await withServer(.https, tlsIdentity: identity) { server in
            server.route("/c", response: .ok("ok"))
            for (delegate, expected) in [
                (TrustDelegate(.defaultHandling) as TrustDelegate?, check.delegateCode), (nil, check.plainCode),
            ] {
                let session = makeSession(delegate: delegate) {
                    if check.trustsCA { $0.courierAdditionalTrustedCertificates = [authority.certificate.derData] }
                }
                let outcome = await session.runDataTask(server.url("/c"))
                if let expected {
                    #expect(outcome.urlError?.code == expected, "delegate: \(delegate != nil)")
                    if delegate != nil {
                        // The refused chain travels with the error, as on Darwin.
                        let trust = try #require(outcome.urlError?.failureURLPeerTrust)
                        #expect(SecTrustGetCertificateCount(trust) == 2)
                    }
                } else {
                    #expect(outcome.data == Data("ok".utf8), "delegate: \(delegate != nil)")
                }
                session.invalidateAndCancel()
            }
        }
    }

    /// A certificate whose only match is an iPAddress entry for the address the connection went to does not name
    /// a DNS host: `https://localhost/` with a leaf for `elsewhere.test` and `127.0.0.1` is refused, with a delegate
    /// (swift-certificates) and without (NIOSSL, whose own host check accepts an address entry equal to the socket's
    /// peer, so a certificate for an address one controls passed for any name resolved or tunnelled to it).
    @Test func anAddressEntryDoesNotNameADNSHost() async throws {
        let authority = try TestCertificateAuthority()
        // Both loopback addresses: `localhost` may be reached over either, and NIOSSL's check must match the one used.
        let identity = try authority.serverIdentity(
            dnsNames: ["elsewhere.test"], ipAddresses: [[127, 0, 0, 1], Array(repeating: 0, count: 15) + [1]])
        try await withServer(.https, host: "localhost", tlsIdentity: identity) { server in
            server.route("/c", response: .ok("ok"))
            let byName = try #require(URL(string: "https://localhost:\(server.port)/c"))
            let byAddress = try #require(URL(string: "https://127.0.0.1:\(server.port)/c"))
            for delegate in [TrustDelegate(.defaultHandling) as TrustDelegate?, nil] {
                let session = makeSession(delegate: delegate) {
                    $0.courierAdditionalTrustedCertificates = [authority.certificate.derData]
                }
                let refused = await session.runDataTask(byName)
                #expect(refused.urlError?.code == .serverCertificateUntrusted, "delegate: \(delegate != nil)")
                #expect(refused.data == nil || refused.data != Data("ok".utf8))
                // The address itself is what the entry names.
                #expect(await session.runDataTask(byAddress).data == Data("ok".utf8), "delegate: \(delegate != nil)")
                session.invalidateAndCancel()
            }
            // Only the requests to the address reached the server.
            #expect(server.requests.count == 2)
        }
    }

    @Test func aClientOnlyCertificateIsNoServersCertificate() async throws {
        // A CA the session trusts issued a certificate for the host, but for TLS clients only.
        let authority = try TestCertificateAuthority()
        let (leaf, key) = try authority.leaf(usage: .clientAuth)
        let identity = MockTLSIdentity(
            certificateChainDER: [Array(leaf.derData), Array(authority.certificate.derData)],
            privateKeyPEM: key.pemRepresentation)
        try await withServer(.https, tlsIdentity: identity) { server in
            server.route("/c", response: .ok("ok"))
            let session = makeSession(delegate: TrustDelegate(.defaultHandling)) {
                $0.courierAdditionalTrustedCertificates = [authority.certificate.derData]
            }
            let outcome = await session.runDataTask(server.url("/c"))
            #expect(outcome.urlError?.code == .serverCertificateUntrusted)
            #expect(outcome.data == nil || outcome.data != Data("ok".utf8))
            session.invalidateAndCancel()
        }
    }
}
