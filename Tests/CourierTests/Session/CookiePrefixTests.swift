import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

/// Cookie name prefixes (RFC 6265bis §4.1.3) over the network: a response cannot store a `__Secure-` cookie
/// without `Secure`, nor a `__Host-` cookie that is not `Secure`, host-only and for `Path=/`; over plain HTTP no
/// prefixed cookie is stored at all, since none can be `Secure` there.
@Suite("Cookie prefixes")
struct CookiePrefixTests {
    @Test(arguments: WireProtocol.allCases)
    func cookiesThatBreakTheirPrefixAreNotStored(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            server.route(
                "/set",
                response: MockResponse(
                    status: 200,
                    headers: [
                        ("Set-Cookie", "plain=1; Path=/"),
                        ("Set-Cookie", "__Secure-a=1; Path=/"),
                        ("Set-Cookie", "__SECURE-b=1; Path=/"),
                        ("Set-Cookie", "__Host-c=1; Path=/"),
                        ("Set-Cookie", "__Host-d=1; Secure; Path=/docs"),
                        ("Set-Cookie", "__Host-e=1; Secure; Path=/"),
                        ("Set-Cookie", "__Secure-f=1; Secure; Path=/"),
                    ],
                    body: .data(Data())))
            let session = makeSession()
            #expect(await session.runDataTask(server.url("/set")).error == nil)
            let stored = session.configuration.httpCookieStorage?.cookies ?? []
            let expected: Set<String> = wire == .h2 ? ["plain", "__Host-e", "__Secure-f"] : ["plain"]
            #expect(Set(stored.map(\.name)) == expected)
            session.invalidateAndCancel()
        }
    }
}
