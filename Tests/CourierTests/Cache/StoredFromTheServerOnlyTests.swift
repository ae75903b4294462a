import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import NIOConcurrencyHelpers
import Testing

/// Only a response from the server is stored (Apple, `willCacheResponse`: "The provided response came from the
/// server, rather than out of the cache"): a response the cache answered with, or a custom `URLProtocol`'s, is not
/// stored again.
@Suite("HTTP cache: only the server's responses are stored")
struct StoredFromTheServerOnlyTests {
    /// `/dashboard` redirects to `/login`, which is stored: following the redirect to the stored page must not file
    /// that page under `/dashboard` (the lookup's request before the redirect), or the next `/dashboard` is answered
    /// with the login page from the cache, the server never asked.
    @Test(arguments: WireProtocol.allCases)
    func aRedirectToAStoredResponseDoesNotStoreItForTheRedirectingURL(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            server.route(
                "/login",
                response: MockResponse(
                    status: 200, headers: [("Cache-Control", "max-age=600")], body: .data(Data("login".utf8))))
            server.route("/dashboard", response: MockResponse(status: 302, headers: [("Location", "/login")]))
            let session = makeSession()
            #expect(await session.runDataTask(server.url("/login")).data == Data("login".utf8))
            #expect(await session.runDataTask(server.url("/dashboard")).data == Data("login".utf8))
            let cache = try #require(session.configuration.urlCache)
            #expect(cache.cachedResponse(for: URLRequest(url: server.url("/dashboard"))) == nil)
            _ = await session.runDataTask(server.url("/dashboard"))
            #expect(server.requests(path: "/dashboard").count == 2)
            #expect(server.requests(path: "/login").count == 1)
            session.invalidateAndCancel()
        }
    }

    /// A stored response that answers a request keeps its storage policy and user info, and the delegate is not
    /// asked `willCacheResponse` for it.
    @Test func aResponseTheCacheAnswersWithIsNotStoredAgain() async throws {
        let url = try #require(URL(string: "http://cached.invalid/note"))
        let response = try #require(
            HTTPURLResponse(
                url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: ["Cache-Control": "max-age=600"]))
        let cache = URLCache(memoryCapacity: 1 << 20, diskCapacity: 0)
        cache.storeCachedResponse(
            CachedURLResponse(
                response: response, data: Data("kept".utf8), userInfo: ["note": "mine"],
                storagePolicy: .allowedInMemoryOnly),
            for: URLRequest(url: url))
        let delegate = CachingDelegate(.keep)
        let session = makeSession(delegate: delegate) {
            $0.urlCache = cache
            $0.requestCachePolicy = .returnCacheDataDontLoad
        }
        let task = session.dataTask(with: url)
        task.resume()
        try await waitUntil { delegate.completed.withLockedValue { $0.contains("complete") } }
        #expect(task.error == nil)
        #expect(delegate.completed.withLockedValue { $0 } == ["complete"])
        let stored = try #require(cache.cachedResponse(for: URLRequest(url: url)))
        #expect(stored.storagePolicy == .allowedInMemoryOnly)
        #expect(stored.userInfo?["note"] as? String == "mine")
        session.invalidateAndCancel()
    }

    /// The README's rule: a custom `URLProtocol`'s responses are not stored (this one even says `.notAllowed`).
    @Test func aCustomProtocolsResponseIsNotStored() async throws {
        StubProtocol.script(
            "/not-stored",
            .respond(status: 200, headers: ["Cache-Control": "max-age=600"], parts: [Data("stub".utf8)]))
        let session = makeSession { $0.protocolClasses = [StubProtocol.self] }
        let url = try #require(URL(string: "https://stub.test/not-stored"))
        #expect(await session.runDataTask(url).data == Data("stub".utf8))
        #expect(session.configuration.urlCache?.cachedResponse(for: URLRequest(url: url)) == nil)
        session.invalidateAndCancel()
    }
}
