import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

@testable import Courier

/// Credentials sent ahead into a Basic space the session authenticated in: the one that worked there, not whatever
/// the storage's default for the space is; and one the server refuses counts as a failed attempt.
@Suite("Preemptive credentials")
struct PreemptiveCredentialTests {
    static let alice = URLCredential(user: "alice", password: "wonder land", persistence: .forSession)
    static let stale = URLCredential(user: "bob", password: "old password", persistence: .forSession)
    static let changed = URLCredential(user: "alice", password: "guess", persistence: .forSession)

    /// The Basic space `protect(_:user:password:realm:)` makes for `/private`.
    static func vault(of server: MockServer) -> URLProtectionSpace {
        URLProtectionSpace(
            host: "127.0.0.1", port: server.port, protocol: server.baseURL.scheme, realm: "vault",
            authenticationMethod: NSURLAuthenticationMethodHTTPBasic)
    }

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
            let space = Self.vault(of: server)
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

    /// A credential the session sent ahead (the space authenticated before) that the server now refuses is a failed
    /// attempt: the challenge it draws says so, and default handling does not send it again.
    @Test(arguments: WireProtocol.allCases)
    func aCredentialSentAheadThatIsRefusedCountsAsAFailure(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            server.protect("/private", user: "alice", password: "wonder land", realm: "vault", response: .ok("secret"))
            let delegate = ChallengeAnsweringDelegate([(.useCredential, Self.alice), (.performDefaultHandling, nil)])
            let session = makeSession(delegate: delegate)
            #expect(await session.runDataTask(server.url("/private")).data == Data("secret".utf8))
            // The stored password no longer matches the server's: the next request sends it ahead and is refused.
            let space = Self.vault(of: server)
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

    /// A long-running process that authenticates with many hosts keeps only the most recent spaces, not every one
    /// for ever; a space looked up counts as recent.
    @Test func theSpacesKeptAreBoundedAndTheLeastRecentlyUsedGoFirst() throws {
        let spaces = AuthenticatedSpaces()
        func url(_ host: Int) -> URL { URL(string: "https://host\(host).test/login")! }
        func remember(_ host: Int) {
            let space = AuthenticationQuestion.Space(
                host: "host\(host).test", port: 443, protocol: "https", realm: "r",
                authenticationMethod: NSURLAuthenticationMethodHTTPBasic)
            spaces.remember(space, user: "u", for: url(host))
        }
        let capacity = AuthenticatedSpaces.capacity
        for host in 0..<capacity { remember(host) }
        #expect(spaces.count == capacity)
        // Host 0, the oldest, is used again: host 1 is now the least recently used.
        #expect(spaces.entry(for: url(0)) != nil)
        for host in capacity..<(capacity + 10) { remember(host) }
        #expect(spaces.count == capacity)
        #expect(spaces.entry(for: url(0)) != nil)
        for host in 1...10 { #expect(spaces.entry(for: url(host)) == nil, "host\(host) kept") }
        for host in 11..<(capacity + 10) { #expect(spaces.entry(for: url(host)) != nil, "host\(host) forgotten") }
    }
}
