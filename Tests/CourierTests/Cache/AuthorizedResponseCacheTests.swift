import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import NIOConcurrencyHelpers
import Testing

/// Responses to requests with `Authorization` and the cache (RFC 9111 §3.5), whichever way the credential came.
@Suite("HTTP cache: authorized responses")
struct AuthorizedResponseCacheTests {
    /// A response to a request that carried a credential sent ahead is an answer to an `Authorization` request like
    /// any other: without `public`, `must-revalidate` or `s-maxage` it is not stored, so a session sharing the cache
    /// without the credential gets the server's 401, not the protected body.
    @Test(arguments: WireProtocol.allCases)
    func aResponseToACredentialSentAheadIsNotStoredForOthers(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            let expected = "Basic " + Data("alice:wonder land".utf8).base64EncodedString()
            server.route("/private") { request in
                guard request.header("Authorization") == expected else {
                    return MockResponse(status: 401, headers: [("WWW-Authenticate", "Basic realm=\"vault\"")])
                }
                return MockResponse(
                    status: 200, headers: [("Cache-Control", "max-age=600")], body: .data(Data("secret".utf8)))
            }
            let cache = URLCache(memoryCapacity: 1 << 20, diskCapacity: 0)
            let credential = URLCredential(user: "alice", password: "wonder land", persistence: .forSession)
            let delegate = ChallengeAnsweringDelegate([(.useCredential, credential)])
            let session = makeSession(delegate: delegate) { $0.urlCache = cache }
            #expect(await session.runDataTask(server.url("/private")).data == Data("secret".utf8))
            // The second request carries the credential ahead (no second challenge).
            #expect(await session.runDataTask(server.url("/private")).data == Data("secret".utf8))
            #expect(server.requests.count == 3)
            #expect(server.requests.last?.header("Authorization") == expected)
            #expect(delegate.challenges.withLockedValue { $0.count } == 1)
            #expect(cache.cachedResponse(for: URLRequest(url: server.url("/private"))) == nil)
            // A session with the same cache and no credential.
            let stranger = makeSession { $0.urlCache = cache }
            let outcome = await stranger.runDataTask(server.url("/private"))
            #expect(outcome.http?.statusCode == 401)
            #expect(outcome.data != Data("secret".utf8))
            #expect(server.requests.count == 4)
            session.invalidateAndCancel()
            stranger.invalidateAndCancel()
        }
    }
}
