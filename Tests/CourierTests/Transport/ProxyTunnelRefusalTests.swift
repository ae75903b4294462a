import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

/// A proxy that refuses a `CONNECT` speaks for itself, not for the `https` origin behind it: nothing but its
/// challenges reaches the request (no cookie stored for the origin, no redirect followed, nothing cached).
@Suite("Proxy tunnel refusals")
struct ProxyTunnelRefusalTests {
    @Test func aRefusedTunnelsFieldsDoNotPassForTheOrigins() async throws {
        try await withServer { landing in
            landing.route("/landing", response: .ok("landed"))
            let answer =
                "HTTP/1.1 302 Found\r\n"
                + "Location: http://127.0.0.1:\(landing.port)/landing\r\n"
                + "Set-Cookie: sid=from-the-proxy; Secure; Path=/\r\n"
                + "Cache-Control: max-age=600\r\n"
                + "Content-Length: 0\r\n\r\n"
            try await withTCPServer(.script([.receive(atLeast: 20), .send(answer)])) { proxy in
                let cache = URLCache(memoryCapacity: 1 << 20, diskCapacity: 0)
                let session = makeSession {
                    $0.connectionProxyDictionary =
                        [
                            "HTTPSEnable": 1, "HTTPSProxy": "127.0.0.1", "HTTPSPort": proxy.port,
                        ] as [String: any Sendable]
                    $0.urlCache = cache
                }
                defer { session.invalidateAndCancel() }
                let account = try #require(URL(string: "https://127.0.0.1:1/account"))
                let outcome = await session.runDataTask(account)
                // The proxy's answer is delivered as it is (no redirect followed), without the proxy's fields.
                #expect(outcome.error == nil)
                #expect(outcome.http?.statusCode == 302)
                #expect(outcome.http?.value(forHTTPHeaderField: "Location") == nil)
                #expect(outcome.http?.value(forHTTPHeaderField: "Set-Cookie") == nil)
                #expect(landing.requests.isEmpty)
                let cookies = session.configuration.httpCookieStorage?.cookies ?? []
                #expect(cookies.isEmpty)
                #expect(cache.cachedResponse(for: URLRequest(url: account)) == nil)
            }
        }
    }
}
