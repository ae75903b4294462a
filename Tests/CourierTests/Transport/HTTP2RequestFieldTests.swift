import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

/// Request fields that HTTP/2 forbids or restricts: sent as HTTP/2 allows, never at the cost of the request or of the
/// connection's other streams.
@Suite("HTTP/2 request fields")
struct HTTP2RequestFieldTests {
    @Test(arguments: ["gzip", "trailers, deflate", "chunked"])
    func aTEOtherThanTrailersIsDroppedAndCostsNoOtherStream(value: String) async throws {
        try await withServer(.h2) { server in
            server.route("/slow", response: .delayed("slow", by: .milliseconds(300)))
            server.route("/te", response: .ok("te"))
            let session = makeSession()
            defer { session.finishTasksAndInvalidate() }
            #expect(await session.runDataTask(server.url("/te")).data == Data("te".utf8))
            async let slow = session.runDataTask(server.url("/slow"))
            try await Task.sleep(for: .milliseconds(50))
            var request = URLRequest(url: server.url("/te"))
            request.setValue(value, forHTTPHeaderField: "TE")
            let outcome = await session.runDataTask(request)
            #expect(outcome.error == nil)
            #expect(outcome.data == Data("te".utf8))
            let sibling = await slow
            #expect(sibling.error == nil)
            #expect(sibling.data == Data("slow".utf8))
            #expect(server.requests(path: "/te").last?.header("TE") == nil)
            #expect(server.connectionCount == 1)
        }
    }

    @Test func teTrailersIsSent() async throws {
        try await withServer(.h2) { server in
            server.route("/te", response: .ok("te"))
            var request = URLRequest(url: server.url("/te"))
            request.setValue("trailers", forHTTPHeaderField: "TE")
            let outcome = await makeSession().runDataTask(request)
            #expect(outcome.data == Data("te".utf8))
            #expect(server.requests(path: "/te").first?.header("TE") == "trailers")
        }
    }
}
