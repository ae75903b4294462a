import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

/// A response served from the `URLCache` does not store its `Set-Cookie` fields again: they were stored when the
/// response came from the network, and storing them again would undo the changes made to the cookies since.
@Suite("Set-Cookie of cached responses")
struct CachedSetCookieTests {
    private func value(of name: String, in session: URLSession) -> String? {
        session.configuration.httpCookieStorage?.cookies?.first { $0.name == name }?.value
    }

    @Test(arguments: WireProtocol.allCases)
    func aFreshHitDoesNotBringBackADeletedCookie(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            server.route(
                "/page",
                response: MockResponse(
                    headers: [("Cache-Control", "max-age=600"), ("Set-Cookie", "sid=old; Path=/; Max-Age=3600")],
                    body: .data(Data("page".utf8))))
            server.route(
                "/logout",
                response: MockResponse(
                    headers: [("Cache-Control", "no-store"), ("Set-Cookie", "sid=gone; Path=/; Max-Age=0")]))
            let session = makeSession()
            defer { session.invalidateAndCancel() }

            _ = await session.runDataTask(server.url("/page"))
            #expect(value(of: "sid", in: session) == "old")
            _ = await session.runDataTask(server.url("/logout"))
            #expect(value(of: "sid", in: session) == nil)
            let cached = await session.runDataTask(server.url("/page"))
            #expect(cached.data == Data("page".utf8))
            #expect(server.requests(path: "/page").count == 1)
            // The logout stands.
            #expect(value(of: "sid", in: session) == nil)
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func aRevalidatedResponseDoesNotPutBackAnOldCookie(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            server.route("/doc") { request in
                if request.header("If-None-Match") == "\"v1\"" {
                    return MockResponse(status: 304, headers: [("ETag", "\"v1\"")])
                }
                return MockResponse(
                    headers: [("ETag", "\"v1\""), ("Cache-Control", "no-cache"), ("Set-Cookie", "csrf=one; Path=/")],
                    body: .data(Data("document".utf8)))
            }
            server.route(
                "/rotate",
                response: MockResponse(headers: [("Cache-Control", "no-store"), ("Set-Cookie", "csrf=two; Path=/")]))
            let session = makeSession()
            defer { session.invalidateAndCancel() }

            _ = await session.runDataTask(server.url("/doc"))
            _ = await session.runDataTask(server.url("/rotate"))
            #expect(value(of: "csrf", in: session) == "two")
            let revalidated = await session.runDataTask(server.url("/doc"))
            #expect(revalidated.data == Data("document".utf8))
            #expect(server.requests(path: "/doc").last?.header("If-None-Match") == "\"v1\"")
            // The 304 set no cookie: the token the server rotated to is kept.
            #expect(value(of: "csrf", in: session) == "two")
        }
    }
}
