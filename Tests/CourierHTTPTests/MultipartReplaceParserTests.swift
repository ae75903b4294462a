import CourierHTTP
import Testing

/// `multipart/x-mixed-replace` bodies split into parts, however the bytes arrive.
@Suite("multipart/x-mixed-replace parsing")
struct MultipartReplaceParserTests {
    /// A part as a test sees it: its fields and its whole body.
    struct Part: Equatable, CustomStringConvertible {
        var fields: [MultipartReplaceParser.Field]
        var body: String
        var description: String { "\(fields.map { "\($0.name)=\($0.value)" }) \(body.debugDescription)" }
    }

    /// Parses `body` fed in pieces of `pieceSize` bytes and joins the events into parts.
    private func parts(_ body: String, pieceSize: Int, boundary: String = "frame") throws -> [Part] {
        var parser = try #require(
            MultipartReplaceParser(contentType: "multipart/x-mixed-replace; boundary=\(boundary)"))
        let bytes = Array(body.utf8)
        var events: [MultipartReplaceParser.Event] = []
        var index = 0
        while index < bytes.count {
            events += try parser.feed(bytes[index..<min(index + pieceSize, bytes.count)])
            index += pieceSize
        }
        events += parser.finish()
        var parts: [Part] = []
        var open = false
        for event in events {
            switch event {
            case .partHead(let fields):
                #expect(!open, "a head inside a part")
                parts.append(Part(fields: fields, body: ""))
                open = true
            case .partBody(let bytes):
                #expect(open, "body outside a part")
                parts[parts.count - 1].body += String(decoding: bytes, as: UTF8.self)
            case .partEnd:
                #expect(open, "an end outside a part")
                open = false
            }
        }
        #expect(!open, "a part never ended")
        return parts
    }

    private func field(_ name: String, _ value: String) -> MultipartReplaceParser.Field {
        .init(name: name, value: value)
    }

    @Test func onePartSplitAtEveryByte() throws {
        let body = "--frame\r\nContent-Type: text/plain\r\n\r\nhello\r\nworld\r\n--frame--\r\n"
        for size in 1...body.utf8.count {
            #expect(
                try parts(body, pieceSize: size) == [
                    Part(fields: [field("Content-Type", "text/plain")], body: "hello\r\nworld")
                ])
        }
    }

    @Test func aHundredPartsSplitAtEveryByteUpToSeventeen() throws {
        let body =
            "preamble to ignore\r\n"
            + (0..<100).map { "--frame\r\nContent-Type: text/plain\r\nX-Index: \($0)\r\n\r\npart \($0)\r\n" }.joined()
            + "--frame--\r\nepilogue"
        let expected = (0..<100).map {
            Part(fields: [field("Content-Type", "text/plain"), field("X-Index", "\($0)")], body: "part \($0)")
        }
        for size in [1, 2, 3, 5, 7, 11, 13, 17, 4096] {
            #expect(try parts(body, pieceSize: size) == expected)
        }
    }

    @Test func bareLineFeedsPaddingEmptyPartsAndBodiesThatLookLikeDelimiters() throws {
        let body =
            "--frame  \nA: 1\n\nx--frame is not at a line start; -- frame neither\n--frame\n\n\n--frame\r\n\r\nlast"
        #expect(
            try parts(body, pieceSize: 3) == [
                Part(fields: [field("A", "1")], body: "x--frame is not at a line start; -- frame neither"),
                Part(fields: [], body: ""),
                Part(fields: [], body: "last"),
            ])
    }

    /// A part without a body (RFC 2046: `headers CRLF--boundary`, the line end that closes the head is the one
    /// before the delimiter) ends at that delimiter: it used to take in the next part, whose delimiter and header
    /// fields the app then got as body bytes, and whose response it was never told about.
    @Test func aPartWithNoBodyEndsAtTheNextDelimiter() throws {
        let body =
            "--frame\r\nContent-Type: a\r\n\r\n--frame\r\nContent-Type: b\r\n\r\nsecond\r\n"
            + "--frame\r\n\r\n--frame\nC: 1\n\n--frame--\r\n"
        for size in 1...body.utf8.count {
            #expect(
                try parts(body, pieceSize: size) == [
                    Part(fields: [field("Content-Type", "a")], body: ""),
                    Part(fields: [field("Content-Type", "b")], body: "second"),
                    Part(fields: [], body: ""),
                    Part(fields: [field("C", "1")], body: ""),
                ])
        }
    }

    @Test func aStreamCutInsideAPartEndsIt() throws {
        #expect(try parts("--frame\r\n\r\npartial bo", pieceSize: 4) == [Part(fields: [], body: "partial bo")])
        #expect(try parts("--frame\r\nContent-Ty", pieceSize: 4) == [])
    }

    /// A hostile server's read packed with tiny parts costs time in proportion to its length: each part used to move
    /// the rest of the read in the buffer, several times, so two megabytes of ten-byte parts took tens of seconds.
    @Test func aReadOfManyTinyPartsIsParsedInLinearTime() throws {
        var parser = try #require(MultipartReplaceParser(contentType: "multipart/x-mixed-replace; boundary=b"))
        let part = Array("--b\r\n\r\nx\r\n".utf8)
        let count = 200_000
        var body: [UInt8] = []
        body.reserveCapacity(part.count * count)
        for _ in 0..<count { body += part }
        var heads = 0
        let elapsed = try ContinuousClock().measure {
            for event in try parser.feed(body) {
                if case .partHead = event { heads += 1 }
            }
        }
        #expect(heads == count)
        #expect(elapsed < .seconds(5))
    }

    @Test func hostileInputsAreRefused() throws {
        var parser = try #require(MultipartReplaceParser(contentType: "multipart/x-mixed-replace;boundary=\"b\""))
        let huge = "--b\r\n" + String(repeating: "X-Long: " + String(repeating: "a", count: 1000) + "\r\n", count: 70)
        #expect(throws: TransferError.self) { _ = try parser.feed(Array(huge.utf8)) }

        var endless = try #require(MultipartReplaceParser(contentType: "multipart/x-mixed-replace; boundary=b"))
        #expect(throws: TransferError.self) {
            _ = try endless.feed(Array(("--b\r\n" + String(repeating: "a", count: 70_000)).utf8))
        }

        var garbage = try #require(MultipartReplaceParser(contentType: "multipart/x-mixed-replace; boundary=b"))
        #expect(throws: TransferError.self) { _ = try garbage.feed(Array("--bX\r\n".utf8)) }

        #expect(MultipartReplaceParser(contentType: "multipart/mixed; boundary=b") == nil)
        #expect(MultipartReplaceParser(contentType: "multipart/x-mixed-replace") == nil)
        #expect(
            MultipartReplaceParser(
                contentType: "multipart/x-mixed-replace; boundary=" + String(repeating: "b", count: 71)) == nil)
    }

    /// The byte check that spares other responses the media-type parse keeps what the parse accepts: spaces or tabs
    /// before the type and any letter case.
    @Test(arguments: [
        (" \tMultipart/X-Mixed-Replace; boundary=b", true), ("MULTIPART/X-MIXED-REPLACE;boundary=b", true),
        ("text/plain; boundary=b", false), ("multipartx/x-mixed-replace; boundary=b", false), ("multi", false),
        ("", false), ("multipart/", false),
    ])
    func anyCaseAndLeadingWhitespaceAreStillMultipart(contentType: String, accepted: Bool) {
        #expect((MultipartReplaceParser(contentType: contentType) != nil) == accepted)
    }
}
