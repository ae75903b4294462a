import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import NIOConcurrencyHelpers
import Testing

/// RFC 9111 §4.4 for an unsafe request answered with a redirect: a `3xx` is a non-error status, so the stored
/// response of the target URI is removed before the redirect is followed.
@Suite("HTTP cache: an unsafe request answered with a redirect")
struct RedirectedUnsafeRequestTests {
    /// Post/Redirect/Get: the form's `POST` updates `/item` and answers `303 See Other` to it. The `GET` that follows
    /// must reach the server, not be answered with the version stored before the update.
    @Test(arguments: WireProtocol.allCases)
    func aPostAnsweredWithSeeOtherInvalidatesBeforeTheGetThatFollows(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            let version = NIOLockedValueBox(1)
            server.route("/item", method: "GET") { _ in
                MockResponse(
                    status: 200, headers: [("Cache-Control", "max-age=600")],
                    body: .data(Data("v\(version.withLockedValue { $0 })".utf8)))
            }
            server.route("/item", method: "POST") { _ in
                version.withLockedValue { $0 += 1 }
                return MockResponse(status: 303, headers: [("Location", "/item")])
            }
            let session = makeSession()
            #expect(await session.runDataTask(server.url("/item")).data == Data("v1".utf8))
            var post = URLRequest(url: server.url("/item"))
            post.httpMethod = "POST"
            post.httpBody = Data("name=new".utf8)
            let outcome = await session.runDataTask(post)
            #expect(outcome.http?.statusCode == 200)
            #expect(outcome.data == Data("v2".utf8))
            #expect(await session.runDataTask(server.url("/item")).data == Data("v2".utf8))
            #expect(server.requests(path: "/item").count == 3)
            session.invalidateAndCancel()
        }
    }
}
