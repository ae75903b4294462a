import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

@testable import Courier

/// A credential the session sent ahead (the space authenticated before) that the server now refuses is a failed
/// attempt: the challenge it draws says so, and default handling does not send it again.
@Suite("Refused preemptive credential")
struct RefusedPreemptiveCredentialTests {
    static let alice = URLCredential(user: "alice", password: "wonder land", persistence: .forSession)
    static let changed = URLCredential(user: "alice", password: "guess", persistence: .forSession)

    @Test(arguments: WireProtocol.allCases)
    func aCredentialSentAheadThatIsRefusedCountsAsAFailure(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            server.protect("/private", user: "alice", password: "wonder land", realm: "vault", response: .ok("secret"))
            let delegate = ChallengeAnsweringDelegate([(.useCredential, Self.alice), (.performDefaultHandling, nil)])
            let session = makeSession(delegate: delegate)
            #expect(await session.runDataTask(server.url("/private")).data == Data("secret".utf8))
            // The stored password no longer matches the server's: the next request sends it ahead and is refused.
            let space = URLProtectionSpace(
                host: "127.0.0.1", port: server.port, protocol: server.baseURL.scheme, realm: "vault",
                authenticationMethod: NSURLAuthenticationMethodHTTPBasic)
            session.configuration.urlCredentialStorage?.set(Self.changed, for: space)

            let refused = await session.runDataTask(server.url("/private"))
            #expect(refused.error == nil && refused.http?.statusCode == 401)
            let challenges = delegate.challenges.withLockedValue { $0 }
            #expect(challenges.count == 2)
            // Without the fix: previousFailureCount 0, default handling sent "guess" a second time, and a third
            // challenge (the delegate out of answers) cancelled the task.
            #expect(challenges.last?.previousFailureCount == 1)
            #expect(challenges.last?.proposedCredential?.password == "guess")
            let sentAhead = "Basic " + Data("alice:guess".utf8).base64EncodedString()
            #expect(server.requests.count == 3)
            #expect(server.requests.last?.header("Authorization") == sentAhead)
            session.invalidateAndCancel()
        }
    }
}
