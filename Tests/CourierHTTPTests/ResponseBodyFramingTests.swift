import CourierHTTP
import Testing

@Suite("ResponseBodyFraming")
struct ResponseBodyFramingTests {
    /// A head, the reads that follow it, and how many bytes of each belong to the body (`nil`: all, and it goes on).
    struct Case: Sendable, CustomTestStringConvertible {
        var head: String
        var method = "GET"
        var reads: [String]
        var used: [Int?]
        var testDescription: String { "\(head.split(separator: "\r\n").joined(separator: " | ")) \(reads)" }
    }

    static let cases: [Case] = [
        // Content-Length: exactly, split, and with bytes after it.
        .init(head: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", reads: ["hello"], used: [5]),
        .init(head: "HTTP/1.1 200 OK\r\ncontent-length:  5 \r\n\r\n", reads: ["hel", "loHTTP/1.1"], used: [nil, 2]),
        .init(head: "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", reads: ["H"], used: [0]),
        // No body: HEAD, 204, 304, whatever their length fields say.
        .init(head: "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n", method: "HEAD", reads: ["HTTP/1.1 2"], used: [0]),
        .init(head: "HTTP/1.1 204 No Content\r\nContent-Length: 3\r\n\r\n", reads: ["abc"], used: [0]),
        .init(head: "HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n", reads: ["0\r\n\r\n"], used: [0]),
        // Chunked, whole, a byte at a time, with an extension, trailers, upper-case hex, and a coding before it.
        .init(
            head: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", reads: ["5\r\nhello\r\n0\r\n\r\nHTTP/1.1"],
            used: [15]),
        .init(
            head: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            reads: ["5", "\r", "\n", "hel", "lo", "\r\n", "0\r", "\n", "\r", "\nX"],
            used: [nil, nil, nil, nil, nil, nil, nil, nil, nil, 1]),
        .init(
            head: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            reads: ["5;name=\"a;b\"\r\nhello\r\n0\r\nTrailer-A: 1\r\nTrailer-B: 2\r\n\r\nextra"], used: [54]),
        // Whitespace after a size (RFC 9112's BWS), before an extension or the line's end, split across reads.
        .init(
            head: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            reads: ["5 \t; a=b\r\nhello\r\n", "0 ", " \r\n\r\nX"], used: [nil, nil, 5]),
        .init(
            head: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", reads: ["A\r\n0123456789\r\n0\r\n\r\n"],
            used: [20]),
        .init(
            head: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, Chunked\r\nContent-Length: 3\r\n\r\n",
            reads: ["3\r\nabc\r\n0\r\n\r\nX"], used: [13]),
        // Until the close: no framing field, a coding other than chunked last, a switch of protocols, a tunnel.
        .init(head: "HTTP/1.1 200 OK\r\n\r\n", reads: ["anything", "at all"], used: [nil, nil]),
        .init(head: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", reads: ["0\r\n\r\n"], used: [nil]),
        .init(head: "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n", reads: ["\u{81}"], used: [nil]),
        .init(head: "HTTP/1.1 200 Connection established\r\n\r\n", method: "CONNECT", reads: ["\u{16}"], used: [nil]),
    ]

    @Test(arguments: cases)
    func findsTheEndOfTheBody(_ item: Case) throws {
        var framing = Array(item.head.utf8).withUnsafeBytes {
            ResponseBodyFraming(head: $0, requestMethod: item.method)
        }
        for (read, expected) in zip(item.reads, item.used) {
            let used = try Array(read.utf8).withUnsafeBytes { try framing.consume($0) }
            #expect(used == expected, "\(read.debugDescription)")
        }
        #expect(framing.isComplete == (item.used.last.map { $0 != nil } ?? false))
    }

    @Test func aHugeChunkSizeIsRefusedInsteadOfTrapping() {
        var framing = Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".utf8).withUnsafeBytes {
            ResponseBodyFraming(head: $0, requestMethod: "GET")
        }
        #expect(throws: TransferError.self) {
            try Array("FFFFFFFFFFFFFFFFFFFFFFFF\r\nabc".utf8).withUnsafeBytes { try framing.consume($0) }
        }
        #expect(!framing.isComplete)
    }

    /// The content of each read, without the chunked framing; split reads give the same bytes.
    @Test(arguments: [1, 2, 3, 7, 1000])
    func decodeHandsOnTheContentAlone(readSize: Int) throws {
        var framing = Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".utf8).withUnsafeBytes {
            ResponseBodyFraming(head: $0, requestMethod: "GET")
        }
        let body = Array("3;x=y\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\nT: v\r\n\r\nafter".utf8)
        var content: [UInt8] = []
        var used: Int?
        var start = 0
        while start < body.count, used == nil {
            let read = Array(body[start..<min(body.count, start + readSize)])
            used = try read.withUnsafeBytes { bytes in
                try framing.decode(bytes) { content += bytes[$0] }
            }.map { start + $0 }
            start += read.count
        }
        #expect(String(decoding: content, as: UTF8.self) == "abc0123456789abcdef")
        #expect(used == body.count - "after".utf8.count)
        #expect(framing.isComplete)
    }

    @Test(arguments: [
        "zz\r\n", "\r\n", "5\nhello", "5\r\nhelloX", "5\r\nhello\n", "5;a\u{1}\r\n", "0\r\nT: 1\n", "0\r\nT:\u{0}\r\n",
        "5\rX",
        // Whitespace after a size does not end it: "5 6" is no size of 5 with a 6 to ignore.
        "5 6\r\nhello\r\n", "5\t;x\r\nhello\r\n0 0\r\n", "0 \u{1}\r\n\r\n",
    ])
    func malformedChunksAreRefused(body: String) {
        var framing = Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".utf8).withUnsafeBytes {
            ResponseBodyFraming(head: $0, requestMethod: "GET")
        }
        #expect(throws: TransferError.self) {
            try Array(body.utf8).withUnsafeBytes { try framing.consume($0) }
        }
    }

    /// The same decision from parsed fields, for the transport's check of a TLS close without close_notify.
    @Test func endsAtCloseAgreesWithTheRawHeadsDecision() {
        func ends(_ status: Int, _ method: String = "GET", te: [String] = [], length: Bool = false) -> Bool {
            ResponseBodyFraming.endsAtClose(
                status: status, requestMethod: method, transferEncoding: te, hasContentLength: length)
        }
        #expect(ends(200))
        #expect(ends(200, te: ["chunked, gzip"]))
        #expect(ends(200, te: ["identity"], length: true))
        #expect(!ends(200, length: true))
        #expect(!ends(200, te: ["gzip, Chunked"], length: true))
        #expect(!ends(200, "HEAD"))
        #expect(!ends(204))
        #expect(!ends(304))
        #expect(!ends(103))
    }
}

@Suite("ConnectionPersistence")
struct ConnectionPersistenceTests {
    @Test(arguments: [
        ([String](), 1, true),
        ([], 0, false),
        (["close"], 1, false),
        (["Keep-Alive"], 0, true),
        (["upgrade,  CLOSE "], 1, false),
        (["keep-alive", "close"], 1, false),
        (["close, keep-alive"], 0, false),
        (["keep-alive, keep-alive"], 0, false),
        (["closed", "keep-alives", " , "], 1, true),
        (["te,\tkeep-alive\t"], 0, true),
    ])
    func theOptionsAndTheVersionDecide(values: [String], minor: Int, persists: Bool) {
        let persistence = values.reduce(ConnectionPersistence.unstated) { $0.adding($1) }
        #expect(persistence.persists(versionMajor: 1, versionMinor: minor) == persists)
    }
}
