import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

@testable import Courier

/// The credential sent ahead into a Basic space is the one that worked there, not whatever the storage's default for
/// the space is.
@Suite("Preemptive credential user")
struct PreemptiveCredentialUserTests {
    static let alice = URLCredential(user: "alice", password: "wonder land", persistence: .forSession)
    static let stale = URLCredential(user: "bob", password: "old password", persistence: .forSession)

    /// The storage's default for the space is bob's old credential (kept from an earlier run, or set by the app);
    /// the delegate answers with alice's, which works. `set(_:for:)` stores alice's without making it the default,
    /// so a later request of the session must send alice's ahead: sending bob's would draw a 401, and the delegate's
    /// question, on every request.
    @Test(arguments: WireProtocol.allCases)
    func theUserThatWorkedIsSentAheadNotTheStoragesDefault(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            server.protect("/private", user: "alice", password: "wonder land", realm: "vault", response: .ok("secret"))
            let delegate = ChallengeAnsweringDelegate([(.useCredential, Self.alice)])
            let session = makeSession(delegate: delegate)
            let space = URLProtectionSpace(
                host: "127.0.0.1", port: server.port, protocol: server.baseURL.scheme, realm: "vault",
                authenticationMethod: NSURLAuthenticationMethodHTTPBasic)
            let storage = try #require(session.configuration.urlCredentialStorage)
            storage.setDefaultCredential(Self.stale, for: space)

            #expect(await session.runDataTask(server.url("/private")).data == Data("secret".utf8))
            #expect(storage.credentials(for: space)?["alice"]?.password == "wonder land")
            #expect(storage.defaultCredential(for: space)?.user == "bob")

            // Without the fix this request went out with bob's credential, drew a 401, and the delegate (out of
            // answers) cancelled it.
            let later = await session.runDataTask(server.url("/private"))
            #expect(later.error == nil && later.data == Data("secret".utf8))
            #expect(delegate.challenges.withLockedValue { $0.count } == 1)
            let expected = "Basic " + Data("alice:wonder land".utf8).base64EncodedString()
            #expect(server.requests.count == 3)
            #expect(server.requests.last?.header("Authorization") == expected)

            // Removing the credential that worked stops the preemptive use (bob's default is not sent instead).
            storage.remove(Self.alice, for: space)
            _ = await session.runDataTask(server.url("/private"))
            #expect(server.requests.count == 4)
            #expect(server.requests.last?.header("Authorization") == nil)
            session.invalidateAndCancel()
        }
    }

    @Test func anEntryRemembersTheUserThatWorkedLast() throws {
        let spaces = AuthenticatedSpaces()
        let space = AuthenticationQuestion.Space(
            host: "example.test", port: 443, protocol: "https", realm: "r",
            authenticationMethod: NSURLAuthenticationMethodHTTPBasic)
        let login = try #require(URL(string: "https://example.test/api/login"))
        spaces.remember(space, user: "bob", for: login)
        spaces.remember(space, user: "alice", for: login)
        let items = try #require(URL(string: "https://example.test/api/items"))
        let entry = try #require(spaces.entry(for: items))
        #expect(entry.user == "alice" && entry.space == space)
    }
}
