import Courier
import CourierManager
import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

/// `SecurityPolicy` end to end: a manager whose policy answers the server-trust challenges of `MockServer`s with
/// self-signed certificates, and the policy alone on a `SecTrust` built from a server's certificate.
@Suite("SecurityPolicy")
struct SecurityPolicyTests {
    /// Runs `body` with two HTTPS servers (each with its own self-signed certificate).
    private func withTwoServers(_ body: (MockServer, MockServer) async throws -> Void) async throws {
        let first = MockServer(scheme: .https)
        let second = MockServer(scheme: .https)
        try await first.start()
        try await second.start()
        do {
            try await body(first, second)
            try await first.shutdown()
            try await second.shutdown()
        } catch {
            try? await first.shutdown()
            try? await second.shutdown()
            throw error
        }
    }

    /// The error of a GET of `/ok` on `server` through a manager with `policy` (`nil` when it succeeded).
    private func error(fetching server: MockServer, with policy: SecurityPolicy) async -> (any Error)? {
        server.route("/ok", response: .ok("ok"))
        let configuration = URLSessionConfiguration.ephemeral
        configuration.connectionProxyDictionary = [:]
        let manager = SessionManager(sessionConfiguration: configuration)
        manager.completionQueue = DispatchQueue(label: "policy")
        manager.responseSerializer = HTTPResponseSerializer()
        manager.securityPolicy = policy
        defer { manager.invalidateSessionCancelingTasks(true, resetSession: false) }
        let request = URLRequest(url: server.url("/ok"))
        return await withCheckedContinuation { continuation in
            manager.dataTask(with: request) { _, _, error in
                continuation.resume(returning: error.map { $0 as any Error })
            }.resume()
        }
    }

    /// Whether `error` is the manager's refusal of the server (AFNetworking's server-trust error).
    private func isRefused(_ error: (any Error)?) -> Bool {
        (error as? URLError)?.code == .serverCertificateUntrusted
    }

    @Test func theDefaultPolicyRefusesASelfSignedServerAsUntrusted() async throws {
        try await withTwoServers { server, _ in
            #expect(isRefused(await error(fetching: server, with: .default)))
        }
    }

    @Test func aRefusedServerFailsTheTaskWithItsTrustAndURLNotAsCancelled() async throws {
        // AFNetworking cancels the challenge but completes the task with the error of
        // `serverTrustErrorForServerTrust:url:`. Before the fix the task completed with `URLError(.cancelled)`.
        try await withTwoServers { server, _ in
            let failure = try #require(await error(fetching: server, with: .default) as? URLError)
            #expect(failure.code == .serverCertificateUntrusted)
            let trust = try #require(failure.failureURLPeerTrust)
            let leaf = try #require((SecTrustCopyCertificateChain(trust) as? [SecCertificate])?.first)
            #expect(SecCertificateCopyData(leaf) as Data == Data(server.certificateDER))
            #expect(failure.userInfo[NSURLErrorFailingURLErrorKey] as? URL == server.url("/ok"))
            #expect(failure.userInfo["NSErrorFailingURLStringKey"] as? String == server.url("/ok").absoluteString)
        }
    }

    @Test func aTaskHookLeavingServerTrustToDefaultHandlingLeavesItToThePolicy() async throws {
        // AFNetworking's task-level handler evaluates server trust with the policy when the hook answers default
        // handling; the hook is asked about it first.
        try await withTwoServers { server, _ in
            server.route("/ok", response: .ok("ok"))
            let configuration = URLSessionConfiguration.ephemeral
            configuration.connectionProxyDictionary = [:]
            let manager = SessionManager(sessionConfiguration: configuration)
            manager.completionQueue = DispatchQueue(label: "policy-hook")
            manager.responseSerializer = HTTPResponseSerializer()
            let asked = LockedValue<[String]>([])
            manager.hooks.taskDidReceiveChallenge = { _, _, challenge in
                asked.set(asked.get() + [challenge.protectionSpace.authenticationMethod])
                return (.performDefaultHandling, nil)
            }
            defer { manager.invalidateSessionCancelingTasks(true, resetSession: false) }
            let failure: (any Error)? = await withCheckedContinuation { continuation in
                manager.dataTask(with: URLRequest(url: server.url("/ok"))) { _, _, error in
                    continuation.resume(returning: error)
                }.resume()
            }
            #expect(isRefused(failure))
            #expect(asked.get() == [NSURLAuthenticationMethodServerTrust])
        }
    }

    @Test func certificatePinningTrustsThePinnedServerOnly() async throws {
        try await withTwoServers { server, other in
            // A self-signed server is pinned as AFNetworking requires: invalid certificates allowed.
            var pinned = SecurityPolicy(pinningMode: .certificate, pinnedCertificates: [Data(server.certificateDER)])
            pinned.allowInvalidCertificates = true
            #expect(await error(fetching: server, with: pinned) == nil)
            #expect(isRefused(await error(fetching: other, with: pinned)))
        }
    }

    @Test func publicKeyPinningTrustsTheKeyNotTheCertificate() async throws {
        try await withTwoServers { server, other in
            var pinned = SecurityPolicy(pinningMode: .publicKey, pinnedCertificates: [Data(server.certificateDER)])
            // Self-signed, so not valid for the system: public-key pinning alone must vouch for it.
            #expect(isRefused(await error(fetching: server, with: pinned)))
            pinned.allowInvalidCertificates = true
            #expect(await error(fetching: server, with: pinned) == nil)
            #expect(isRefused(await error(fetching: other, with: pinned)))
        }
    }

    @Test func allowingInvalidCertificatesNeedsTheNameCheckOffOrAPin() async throws {
        try await withTwoServers { server, _ in
            var anything = SecurityPolicy.default
            anything.allowInvalidCertificates = true
            // AFNetworking refuses this combination: it would accept any certificate while claiming a name check.
            #expect(isRefused(await error(fetching: server, with: anything)))
            anything.validatesDomainName = false
            #expect(await error(fetching: server, with: anything) == nil)
        }
    }

    @Test func certificatePinningStillNeedsTheSystemsTrustUnlessInvalidCertificatesAreAllowed() async throws {
        // AFNetworking evaluates the chain against the system's roots before the pins, in certificate mode as in
        // public-key mode, unless invalid certificates are allowed. Before the fix a pinned self-signed server was
        // trusted with `allowInvalidCertificates` off, against the property's own documentation.
        try await withTwoServers { server, _ in
            var pinned = SecurityPolicy(pinningMode: .certificate, pinnedCertificates: [Data(server.certificateDER)])
            #expect(isRefused(await error(fetching: server, with: pinned)))
            pinned.allowInvalidCertificates = true
            #expect(await error(fetching: server, with: pinned) == nil)
        }
    }

    @Test func aPinnedCertificateMustStillNameTheHost() async throws {
        let server = MockServer(scheme: .https)
        try await server.start()
        defer { Task { try? await server.shutdown() } }
        let certificate = try #require(SecCertificateCreateWithData(nil, Data(server.certificateDER) as CFData))
        var policy = SecurityPolicy(pinningMode: .certificate, pinnedCertificates: [Data(server.certificateDER)])
        // Self-signed: AFNetworking pins it with invalid certificates allowed only.
        policy.allowInvalidCertificates = true
        func trust() throws -> SecTrust {
            var made: SecTrust?
            #expect(SecTrustCreateWithCertificates([certificate] as CFArray, SecPolicyCreateSSL(true, nil), &made) == 0)
            return try #require(made)
        }
        #expect(policy.evaluateServerTrust(try trust(), forDomain: "127.0.0.1"))
        #expect(!policy.evaluateServerTrust(try trust(), forDomain: "bank.example"))
        var lenient = policy
        lenient.validatesDomainName = false
        #expect(lenient.evaluateServerTrust(try trust(), forDomain: "bank.example"))
    }

    @Test func aPinningPolicyNeedsAnHTTPSBaseURL() async {
        // AFHTTPSessionManager raises when a pinning policy is set without an https base URL; the manager stops the
        // program (in a child process here). Before the fix the policy was taken.
        await #expect(processExitsWith: .failure) {
            let manager = HTTPSessionManager(baseURL: URL(string: "http://api.example/"))
            manager.securityPolicy = SecurityPolicy(pinningMode: .publicKey)
        }
        await #expect(processExitsWith: .failure) {
            let manager = HTTPSessionManager()
            manager.securityPolicy = SecurityPolicy(pinningMode: .certificate)
        }
        let secure = HTTPSessionManager(baseURL: URL(string: "https://api.example/"))
        defer { secure.invalidateSessionCancelingTasks(true, resetSession: false) }
        secure.securityPolicy = SecurityPolicy(pinningMode: .certificate)
        #expect(secure.securityPolicy.pinningMode == .certificate)
        let plain = HTTPSessionManager(baseURL: URL(string: "http://api.example/"))
        defer { plain.invalidateSessionCancelingTasks(true, resetSession: false) }
        plain.securityPolicy = .default
        #expect(plain.securityPolicy.pinningMode == .none)
    }
}

/// The policy against servers whose chain a test CA issued: pins on the leaf, the CA and a key, and an expired leaf.
@Suite("SecurityPolicy with CA-issued chains")
struct SecurityPolicyChainTests {
    /// The error of a GET through a manager with `policy` to a server presenting `identity` (`nil` on success);
    /// `trusting` is added to the session's trusted certificates.
    private func error(
        identity: MockTLSIdentity, policy: SecurityPolicy, trusting extra: [Data] = []
    ) async throws -> (any Error)? {
        let server = MockServer(scheme: .https, tlsIdentity: identity)
        try await server.start()
        defer { Task { try? await server.shutdown() } }
        server.route("/ok", response: .ok("ok"))
        let configuration = URLSessionConfiguration.ephemeral
        configuration.connectionProxyDictionary = [:]
        configuration.courierAdditionalTrustedCertificates = extra
        let manager = SessionManager(sessionConfiguration: configuration)
        manager.completionQueue = DispatchQueue(label: "chains")
        manager.responseSerializer = HTTPResponseSerializer()
        manager.securityPolicy = policy
        defer { manager.invalidateSessionCancelingTasks(true, resetSession: false) }
        let request = URLRequest(url: server.url("/ok"))
        return await withCheckedContinuation { continuation in
            manager.dataTask(with: request) { _, _, error in continuation.resume(returning: error) }.resume()
        }
    }

    private func refused(_ error: (any Error)?) -> Bool { (error as? URLError)?.code == .serverCertificateUntrusted }

    @Test func pinningTheIssuingCAOrTheLeafTrustsTheServer() async throws {
        let ca = try TestCertificateAuthority(commonName: "Pinned CA")
        let (leaf, key) = try ca.leaf()
        let identity = MockTLSIdentity(
            certificateChainDER: [Array(leaf.derData), Array(ca.certificate.derData)],
            privateKeyPEM: key.pemRepresentation)
        // The system trusts the CA (the session's extra roots); each pin narrows that trust.
        let trusted = [ca.certificate.derData]
        let onCA = SecurityPolicy(pinningMode: .certificate, pinnedCertificates: [ca.certificate.derData])
        #expect(try await error(identity: identity, policy: onCA, trusting: trusted) == nil)
        let onLeaf = SecurityPolicy(pinningMode: .certificate, pinnedCertificates: [leaf.derData])
        #expect(try await error(identity: identity, policy: onLeaf, trusting: trusted) == nil)
        let other = try TestCertificateAuthority(commonName: "Other CA")
        let onOther = SecurityPolicy(pinningMode: .certificate, pinnedCertificates: [other.certificate.derData])
        #expect(refused(try await error(identity: identity, policy: onOther, trusting: trusted)))
    }

    @Test func pinningAnIntermediateTrustsTheChainsItIssued() async throws {
        let root = try TestCertificateAuthority(commonName: "Root")
        let intermediate = try root.intermediate()
        let (leaf, key) = try intermediate.leaf()
        let identity = MockTLSIdentity(
            certificateChainDER: [Array(leaf.derData), Array(intermediate.certificate.derData)],
            privateKeyPEM: key.pemRepresentation)
        let trusted = [root.certificate.derData]
        let pinned = SecurityPolicy(pinningMode: .certificate, pinnedCertificates: [intermediate.certificate.derData])
        #expect(try await error(identity: identity, policy: pinned, trusting: trusted) == nil)
        // A sibling intermediate of the same root does not match.
        let sibling = try root.intermediate(commonName: "Sibling")
        let onSibling = SecurityPolicy(pinningMode: .certificate, pinnedCertificates: [sibling.certificate.derData])
        #expect(refused(try await error(identity: identity, policy: onSibling, trusting: trusted)))
    }

    @Test func aPinnedRootTheServerDoesNotSendIsInTheEvaluatedChain() async throws {
        // Servers usually leave their root out; AFNetworking finds the pinned root at the end of Darwin's evaluated
        // chain. Before the fix the chain held the presented certificates only, so both pins were refused.
        let ca = try TestCertificateAuthority(commonName: "Root left out")
        let (leaf, key) = try ca.leaf()
        let identity = MockTLSIdentity(
            certificateChainDER: [Array(leaf.derData)], privateKeyPEM: key.pemRepresentation)
        let certificatePin = SecurityPolicy(pinningMode: .certificate, pinnedCertificates: [ca.certificate.derData])
        #expect(try await error(identity: identity, policy: certificatePin, trusting: [ca.certificate.derData]) == nil)
        let keyPin = SecurityPolicy(pinningMode: .publicKey, pinnedCertificates: [ca.certificate.derData])
        #expect(try await error(identity: identity, policy: keyPin, trusting: [ca.certificate.derData]) == nil)
        // Another root's key is still refused.
        let other = try TestCertificateAuthority(commonName: "Other root")
        let otherPin = SecurityPolicy(pinningMode: .publicKey, pinnedCertificates: [other.certificate.derData])
        #expect(refused(try await error(identity: identity, policy: otherPin, trusting: [ca.certificate.derData])))
    }

    @Test func anExpiredPinnedCertificateIsRefused() async throws {
        let ca = try TestCertificateAuthority(commonName: "CA of an expired leaf")
        let (leaf, key) = try ca.leaf(validFrom: -7200, validUntil: -3600)
        let identity = MockTLSIdentity(
            certificateChainDER: [Array(leaf.derData), Array(ca.certificate.derData)],
            privateKeyPEM: key.pemRepresentation)
        var pinned = SecurityPolicy(
            pinningMode: .certificate, pinnedCertificates: [leaf.derData, ca.certificate.derData])
        #expect(refused(try await error(identity: identity, policy: pinned)))
        // Allowing invalid certificates lifts the system's evaluation only: the pinned anchors still see the expiry.
        pinned.allowInvalidCertificates = true
        #expect(refused(try await error(identity: identity, policy: pinned)))
    }

    @Test func aPinnedCertificateAppendedToAnotherChainIsNoPin() async throws {
        // The pinned certificate is public: an impostor sends it after its own chain, without its private key.
        let pinnedCA = try TestCertificateAuthority(commonName: "Pinned server's CA")
        let (pinned, _) = try pinnedCA.leaf()
        let impostorCA = try TestCertificateAuthority(commonName: "Impostor CA")
        let (leaf, key) = try impostorCA.leaf()
        let identity = MockTLSIdentity(
            certificateChainDER: [Array(leaf.derData), Array(impostorCA.certificate.derData), Array(pinned.derData)],
            privateKeyPEM: key.pemRepresentation)
        var policy = SecurityPolicy(pinningMode: .publicKey, pinnedCertificates: [pinned.derData])
        // A CA the system trusts issued the impostor's certificate for the host: the case pinning exists for.
        #expect(
            refused(try await error(identity: identity, policy: policy, trusting: [impostorCA.certificate.derData])))
        policy.allowInvalidCertificates = true
        #expect(refused(try await error(identity: identity, policy: policy)))
    }

    @Test func aPinnedPublicKeySurvivesARenewedCertificate() async throws {
        let ca = try TestCertificateAuthority(commonName: "Renewing CA")
        let (old, key) = try ca.leaf(validFrom: -86_400 * 30, validUntil: 86_400)
        let (renewed, _) = try ca.leaf(validFrom: -60, validUntil: 86_400 * 90, reusing: key)
        #expect(old.derData != renewed.derData)
        let identity = MockTLSIdentity(
            certificateChainDER: [Array(renewed.derData), Array(ca.certificate.derData)],
            privateKeyPEM: key.pemRepresentation)
        let pinnedOld = SecurityPolicy(pinningMode: .publicKey, pinnedCertificates: [old.derData])
        #expect(try await error(identity: identity, policy: pinnedOld, trusting: [ca.certificate.derData]) == nil)
        // The old certificate itself, pinned as a certificate, no longer matches.
        let certificatePin = SecurityPolicy(pinningMode: .certificate, pinnedCertificates: [old.derData])
        #expect(
            refused(try await error(identity: identity, policy: certificatePin, trusting: [ca.certificate.derData])))
        // A key that is not in the chain is refused.
        let (stranger, _) = try ca.leaf()
        let pinnedStranger = SecurityPolicy(pinningMode: .publicKey, pinnedCertificates: [stranger.derData])
        #expect(
            refused(try await error(identity: identity, policy: pinnedStranger, trusting: [ca.certificate.derData])))
    }
}
