import Courier
import CourierManager
import CourierTestSupport
import Foundation
import Testing

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// The response serializers on responses made by hand: valid, hostile and large bodies.
@Suite("Response serializers")
struct ResponseSerializerTests {
    private func response(_ status: Int = 200, _ contentType: String?) throws -> HTTPURLResponse {
        let url = try #require(URL(string: "https://api.example/x"))
        return try #require(
            HTTPURLResponse(
                url: url, statusCode: status, httpVersion: "HTTP/1.1",
                headerFields: contentType.map { ["Content-Type": $0] } ?? [:]))
    }

    @Test func aTenMegabyteJSONBodyParses() async throws {
        let response = try response(200, "application/json")
        // Seconds of CPU in a debug build: on a thread of its own, not one of the few the concurrent tests share.
        let (size, count) = try await onOwnThread {
            let items = (0..<300_000).map { "{\"id\":\($0),\"name\":\"item \($0)\"}" }
            let body = Data(("[" + items.joined(separator: ",") + "]").utf8)
            let object = try JSONResponseSerializer().responseObject(for: response, data: body)
            return (body.count, (object as? [Any])?.count)
        }
        #expect(size > 10_000_000)
        #expect(count == 300_000)
    }

    @Test func propertyListsRoundTripAndGarbageIsAnError() throws {
        let request = try PropertyListRequestSerializer().request(
            method: "POST", url: try #require(URL(string: "https://api.example/p")), parameters: ["n": 1, "s": "x"])
        #expect(request.value(forHTTPHeaderField: "Content-Type") == "application/x-plist")
        let body = try #require(request.httpBody)
        let object = try PropertyListResponseSerializer().responseObject(
            for: try response(200, "application/x-plist"), data: body)
        #expect((object as? [String: Any])?["s"] as? String == "x")
        #expect(throws: (any Error).self) {
            try PropertyListResponseSerializer().responseObject(
                for: try response(200, "application/x-plist"), data: Data("<plist><dict><key>".utf8))
        }
    }

    @Test func theXMLSerializerHandsOverAParser() throws {
        let object = try XMLParserResponseSerializer().responseObject(
            for: try response(200, "text/xml"), data: Data("<a><b>1</b></a>".utf8))
        let parser = try #require(object as? XMLParser)
        #expect(parser.parse())
        #expect(throws: (any Error).self) {
            try XMLParserResponseSerializer().responseObject(
                for: try response(200, "application/json"), data: Data("{}".utf8))
        }
    }

    @Test func aCompoundSerializerTakesTheFirstThatSucceeds() throws {
        let compound = CompoundResponseSerializer([JSONResponseSerializer(), HTTPResponseSerializer()])
        let text = try compound.responseObject(for: try response(200, "text/plain"), data: Data("hi".utf8))
        #expect(text as? Data == Data("hi".utf8))
        let json = try compound.responseObject(for: try response(200, "application/json"), data: Data("[1]".utf8))
        #expect((json as? [Any])?.count == 1)
        #expect(throws: (any Error).self) {
            try compound.responseObject(for: try response(500, "text/plain"), data: Data("boom".utf8))
        }
    }
}
