import Foundation
import Testing

@testable import Courier

/// The responses ``MultipartReplaceDelivery`` makes for the parts of a `multipart/x-mixed-replace` body.
@Suite("multipart/x-mixed-replace part responses")
struct MultipartPartResponseTests {
    /// A part's response says the version the outer response came over: parts of an HTTP/2 stream used to claim
    /// HTTP/1.1 (seen in the archived response and its equality).
    @Test func aPartResponseKeepsTheOuterHTTPVersion() throws {
        let outer = try #require(
            HTTPURLResponse(
                url: URL(string: "https://example.test/camera")!, statusCode: 200, httpVersion: "HTTP/2.0",
                headerFields: ["Content-Type": "multipart/x-mixed-replace; boundary=frame"]))
        let delivery = try #require(MultipartReplaceDelivery.make(for: outer, asksForResponses: false))
        let steps = try delivery.feed(Data("--frame\r\nContent-Type: image/jpeg\r\n\r\nx".utf8))
        guard case .response(let part)? = steps.first else {
            Issue.record("no part response: \(steps)")
            return
        }
        #expect(part.httpVersion == "HTTP/2.0")
        #expect(part.statusCode == 200)
        #expect(part.value(forHTTPHeaderField: "Content-Type") == "image/jpeg")
    }
}
