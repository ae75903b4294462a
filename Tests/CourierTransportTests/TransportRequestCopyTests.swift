import CourierHTTP
import CourierTransport
import Foundation
import Testing

/// `TransportRequest` keeps its fields in one shared box: a copy must still behave as a value.
@Suite("TransportRequest copies")
struct TransportRequestCopyTests {
    @Test func changingACopyLeavesTheOriginalAlone() throws {
        let original = try makeRequest(try #require(URL(string: "http://example.com/a")))
        var copy = original
        copy.headers.append(("X-Copy", "1"))
        copy.target = "/b"
        copy.tls.applicationProtocols = .http1
        copy.waitsForConnectivity = true
        copy.maximumDecompressionRatio = nil
        #expect(original.headers.isEmpty)
        #expect(original.target == "/a")
        #expect(original.tls.applicationProtocols == .http2AndHTTP1)
        #expect(copy.tls.applicationProtocols == .http1)
        #expect(!original.waitsForConnectivity)
        #expect(original.maximumDecompressionRatio == ContentCoding.defaultMaximumDecompressionRatio)
        #expect(copy.headers.map(\.0) == ["X-Copy"])
        #expect(copy.target == "/b")
        #expect(copy.waitsForConnectivity)
        #expect(copy.maximumDecompressionRatio == nil)
    }

    @Test func aCopyOfACopyKeepsEveryField() throws {
        var first = try makeRequest(try #require(URL(string: "https://example.com:8443/x")), method: "PUT")
        first.tunnelAuthorization = "Basic abc"
        first.proxy = ProxyServer(kind: .http, host: "proxy.example", port: 3128)
        var second = first
        second.method = "POST"
        #expect(second.tunnelAuthorization == "Basic abc")
        #expect(second.proxy?.host == "proxy.example")
        #expect(second.endpoint.port == 8443)
        #expect(first.method == "PUT")
        #expect(second.method == "POST")
    }
}
