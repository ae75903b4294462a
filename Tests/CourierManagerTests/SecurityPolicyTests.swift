import Courier
import CourierManager
import CourierMockServer
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

    private func isCancelled(_ error: (any Error)?) -> Bool {
        (error as? URLError)?.code == .cancelled
    }

    @Test func theDefaultPolicyRefusesASelfSignedServerAsCancelled() async throws {
        try await withTwoServers { server, _ in
            #expect(isCancelled(await error(fetching: server, with: .default)))
        }
    }

    @Test func certificatePinningTrustsThePinnedServerOnly() async throws {
        try await withTwoServers { server, other in
            let pinned = SecurityPolicy(pinningMode: .certificate, pinnedCertificates: [Data(server.certificateDER)])
            #expect(await error(fetching: server, with: pinned) == nil)
            #expect(isCancelled(await error(fetching: other, with: pinned)))
        }
    }

    @Test func publicKeyPinningTrustsTheKeyNotTheCertificate() async throws {
        try await withTwoServers { server, other in
            var pinned = SecurityPolicy(pinningMode: .publicKey, pinnedCertificates: [Data(server.certificateDER)])
            // Self-signed, so not valid for the system: public-key pinning alone must vouch for it.
            #expect(isCancelled(await error(fetching: server, with: pinned)))
            pinned.allowInvalidCertificates = true
            #expect(await error(fetching: server, with: pinned) == nil)
            #expect(isCancelled(await error(fetching: other, with: pinned)))
        }
    }

    @Test func allowingInvalidCertificatesNeedsTheNameCheckOffOrAPin() async throws {
        try await withTwoServers { server, _ in
            var anything = SecurityPolicy.default
            anything.allowInvalidCertificates = true
            // AFNetworking refuses this combination: it would accept any certificate while claiming a name check.
            #expect(isCancelled(await error(fetching: server, with: anything)))
            anything.validatesDomainName = false
            #expect(await error(fetching: server, with: anything) == nil)
        }
    }

    @Test func aPinnedCertificateMustStillNameTheHost() async throws {
        let server = MockServer(scheme: .https)
        try await server.start()
        defer { Task { try? await server.shutdown() } }
        let certificate = try #require(SecCertificateCreateWithData(nil, Data(server.certificateDER) as CFData))
        let policy = SecurityPolicy(pinningMode: .certificate, pinnedCertificates: [Data(server.certificateDER)])
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
}
