import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

/// `Set-Cookie` fields are parsed one line at a time, as received: a comma inside a value does not make two
/// cookies (re-splitting the comma-joined value would).
@Suite("Set-Cookie lines")
struct SetCookieLinesTests {
    @Test func eachLineIsOneCookie() async throws {
        try await withServer { server in
            server.route(
                "/c",
                response: MockResponse(
                    status: 200,
                    headers: [("Set-Cookie", "list=a, b=c; Path=/"), ("Set-Cookie", "plain=1; Path=/")],
                    body: .data(Data())))
            let session = makeSession()
            #expect(await session.runDataTask(server.url("/c")).error == nil)
            let cookies = session.configuration.httpCookieStorage?.cookies(for: server.url("/c")) ?? []
            #expect(Set(cookies.map(\.name)) == ["list", "plain"])
            #expect(cookies.first { $0.name == "list" }?.value == "a, b=c")
            session.invalidateAndCancel()
        }
    }
}
