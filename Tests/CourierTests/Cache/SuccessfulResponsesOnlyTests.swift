import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import NIOConcurrencyHelpers
import Testing

/// Darwin stores successful responses only (Apple, `willCacheResponse`: "a status code in the 200–299 range"), even
/// when RFC 9111 would let a cache store the status.
@Suite("HTTP cache: successful responses only")
struct SuccessfulResponsesOnlyTests {
    /// The app revalidates with its own `If-None-Match` (the lookup then stays out); the server's `304` carries
    /// `max-age`, as GitHub's API does. The `304` goes to the app, and is not stored: the next plain GET gets the
    /// document, not an empty `304` from the cache.
    @Test(arguments: WireProtocol.allCases)
    func aNotModifiedToTheAppsOwnConditionalRequestIsNotStored(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            server.route("/repo") { request in
                let headers: [(name: String, value: String)] = [
                    ("ETag", "\"r1\""), ("Cache-Control", "private, max-age=60"),
                ]
                if request.header("If-None-Match") == "\"r1\"" { return MockResponse(status: 304, headers: headers) }
                return MockResponse(status: 200, headers: headers, body: .data(Data("repo".utf8)))
            }
            let session = makeSession()
            var conditional = URLRequest(url: server.url("/repo"))
            conditional.setValue("\"r1\"", forHTTPHeaderField: "If-None-Match")
            #expect(await session.runDataTask(conditional).http?.statusCode == 304)
            #expect(session.configuration.urlCache?.cachedResponse(for: URLRequest(url: server.url("/repo"))) == nil)
            let plain = await session.runDataTask(server.url("/repo"))
            #expect(plain.http?.statusCode == 200)
            #expect(plain.data == Data("repo".utf8))
            #expect(server.requests(path: "/repo").count == 2)
            session.invalidateAndCancel()
        }
    }

    /// A `404` (with `max-age`, which RFC 9111 would let a cache store) does not replace the stored page: offline,
    /// `.returnCacheDataDontLoad` still answers with the page.
    @Test(arguments: WireProtocol.allCases)
    func anErrorDoesNotReplaceTheStoredPage(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            let missing = NIOLockedValueBox(false)
            server.route("/page") { _ in
                if missing.withLockedValue({ $0 }) {
                    return MockResponse(
                        status: 404, headers: [("Cache-Control", "max-age=600")], body: .data(Data("missing".utf8)))
                }
                return MockResponse(
                    status: 200, headers: [("Cache-Control", "max-age=600")], body: .data(Data("page".utf8)))
            }
            let session = makeSession()
            #expect(await session.runDataTask(server.url("/page")).data == Data("page".utf8))
            missing.withLockedValue { $0 = true }
            var reload = URLRequest(url: server.url("/page"))
            reload.cachePolicy = .reloadIgnoringLocalCacheData
            #expect(await session.runDataTask(reload).http?.statusCode == 404)
            var offline = URLRequest(url: server.url("/page"))
            offline.cachePolicy = .returnCacheDataDontLoad
            let outcome = await session.runDataTask(offline)
            #expect(outcome.http?.statusCode == 200)
            #expect(outcome.data == Data("page".utf8))
            #expect(server.requests(path: "/page").count == 2)
            session.invalidateAndCancel()
        }
    }
}
