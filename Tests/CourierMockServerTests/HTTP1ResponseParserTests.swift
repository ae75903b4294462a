import NIOCore
import NIOHTTP1
import Testing

@testable import CourierMockServer

@Suite struct HTTP1ResponseParserTests {
    /// Feeds `text` one byte at a time and returns every part, so no boundary is special.
    private static func parseBytewise(_ text: String, isHeadRequest: Bool = false) throws -> [HTTPServerResponsePart] {
        var parser = HTTP1ResponseParser()
        parser.isHeadRequest = isHeadRequest
        var parts: [HTTPServerResponsePart] = []
        for byte in text.utf8 {
            parts += try parser.parse(ByteBuffer(bytes: [byte]))
        }
        return parts
    }

    private static func summary(_ parts: [HTTPServerResponsePart]) -> [String] {
        var summary: [String] = []
        var body = ""
        for part in parts {
            switch part {
            case .head(let head):
                summary.append("head \(head.status.code) \(head.headers.map { "\($0.name)=\($0.value)" })")
            case .body(.byteBuffer(let buffer)):
                body += String(buffer: buffer)
            case .body:
                summary.append("file region")
            case .end(let trailers):
                if !body.isEmpty { summary.append("body \(body)") }
                body = ""
                summary.append("end \(trailers.map { $0.map { "\($0.name)=\($0.value)" } } ?? [])")
            }
        }
        return summary
    }

    @Test func contentLengthBody() throws {
        let parts = try Self.parseBytewise("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nX: y\r\n\r\nabc")
        #expect(Self.summary(parts) == ["head 200 [\"Content-Length=3\", \"X=y\"]", "body abc", "end []"])
    }

    @Test func chunkedBodyWithTrailers() throws {
        let text = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nT: 1\r\n\r\n"
        #expect(
            Self.summary(try Self.parseBytewise(text)) == [
                "head 200 [\"Transfer-Encoding=chunked\"]", "body abcde", "end [\"T=1\"]",
            ])
    }

    @Test func informationalHeadsThenFinal() throws {
        let text = "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n"
        #expect(
            Self.summary(try Self.parseBytewise(text)) == [
                "head 103 [\"Link=</a>\"]", "head 204 [\"Content-Length=9\"]", "end []",
            ])
    }

    @Test func headResponsesHaveNoBody() throws {
        var parser = HTTP1ResponseParser()
        parser.isHeadRequest = true
        let parts = try parser.parse(ByteBuffer(string: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"))
        #expect(Self.summary(parts) == ["head 200 [\"Content-Length=5\"]", "end []"])
        #expect(parser.isComplete)
        // Whatever follows the response is dropped.
        #expect(try parser.parse(ByteBuffer(string: "hello")).isEmpty)
    }

    @Test func bodyWithoutLengthRunsUntilClose() throws {
        var parser = HTTP1ResponseParser()
        let parts = try parser.parse(ByteBuffer(string: "HTTP/1.1 200 OK\r\n\r\nsome"))
        #expect(parts.count == 2)
        #expect(parser.isCloseDelimited)
        #expect(!parser.isComplete)
    }

    @Test func garbageIsRejected() {
        var parser = HTTP1ResponseParser()
        #expect(throws: HTTP1ResponseParser.MalformedResponse.self) {
            try parser.parse(ByteBuffer(string: "SMTP ready\r\n\r\n"))
        }
        var chunked = HTTP1ResponseParser()
        #expect(throws: HTTP1ResponseParser.MalformedResponse.self) {
            try chunked.parse(ByteBuffer(string: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"))
        }
    }
}
