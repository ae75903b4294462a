import CourierHTTP
import Foundation
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

@testable import CourierTransport

@Suite("HTTP1ClientCodec")
struct HTTP1ClientCodecTests {
    static let endpoint = Endpoint(scheme: .http, host: "a.example", port: 80)

    static func makeChannel(method: HTTPMethod = .GET) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel(handler: HTTP1ClientCodec(endpoint: endpoint))
        try channel.writeOutbound(
            HTTPClientRequestPart.head(HTTPRequestHead(version: .http1_1, method: method, uri: "/")))
        _ = try channel.readOutbound(as: IOData.self)
        return channel
    }

    /// The parts `channel` passed on, as text: a head as its status code and its fields, each line ended by CRLF,
    /// then a blank line; body bytes as they are; an end as `<end>`.
    static func rendered(_ channel: EmbeddedChannel) throws -> String {
        var output = ""
        while let part = try channel.readInbound(as: HTTPClientResponsePart.self) {
            switch part {
            case .head(let head):
                output += "\(head.status.code)\r\n"
                for field in head.headers { output += "\(field.name): \(field.value)\r\n" }
                output += "\r\n"
            case .body(let buffer):
                output += String(buffer: buffer)
            case .end:
                output += "<end>"
            }
        }
        return output
    }

    /// Feeds `pieces` through a codec after a request head went out; returns what it passed on, or the error it
    /// raised.
    static func decode(_ pieces: [String], method: HTTPMethod = .GET) throws -> (output: String, error: TransferError?)
    {
        let channel = try makeChannel(method: method)
        defer { _ = try? channel.finish(acceptAlreadyClosed: true) }
        var output = ""
        var error: TransferError?
        for piece in pieces {
            do {
                try channel.writeInbound(ByteBuffer(string: piece))
            } catch let caught as TransferError {
                error = caught
            }
            output += try rendered(channel)
        }
        return (output, error)
    }

    @Test(arguments: [
        ("HTTP/1.1 200 OK\nA: b\n\nbody", "200\r\nA: b\r\n\r\nbody"),
        ("HTTP/1.1 200 OK\r\nA: b\n\r\nbody\nstays\r", "200\r\nA: b\r\n\r\nbody\nstays\r"),
        (
            "HTTP/1.1 200 OK\r\nContent-Length: 4\r\ncontent-length: 4\r\n\r\nbody",
            "200\r\nContent-Length: 4\r\n\r\nbody<end>"
        ),
        ("HTTP/1.1 200 OK\r\nContent-Length: 4 ,4\r\n\r\nbody", "200\r\nContent-Length: 4\r\n\r\nbody<end>"),
        ("HTTP/1.1 204\r\n\r\n", "204\r\n\r\n<end>"),
        ("\nHTTP/1.1 200 OK\n\n", "200\r\n\r\n"),
        // A leading bare LF and a bare-LF line end add up to the byte count of a strict head: still rewritten.
        ("\nHTTP/1.1 200 OK\nA: b\r\n\r\n", "200\r\nA: b\r\n\r\n"),
        ("HTTP/1.1 100 Continue\n\nHTTP/1.1 200 OK\nA: b\n\n\n", "100\r\n\r\n200\r\nA: b\r\n\r\n\n"),
        // Field values lose the whitespace around them; an obs-fold becomes a space.
        (
            "HTTP/1.1 200 OK\r\nA:  b c \t\r\nD:\r\nE: f\r\n  g\r\nContent-Length: 0\r\n\r\n",
            "200\r\nA: b c\r\nD: \r\nE: f g\r\nContent-Length: 0\r\n\r\n<end>"
        ),
        // A chunked body loses its framing (size lines, extensions, trailers).
        (
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;a=\"b;c\"\r\nhello\r\nA\r\n0123456789\r\n0\r\nT: 1\r\n\r\n",
            "200\r\nTransfer-Encoding: chunked\r\n\r\nhello0123456789<end>"
        ),
        // No body: 304 and 204 whatever their framing says.
        ("HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n", "304\r\nContent-Length: 9\r\n\r\n<end>"),
    ])
    func responsesArePassedOnAsParts(input: String, expected: String) throws {
        #expect(try Self.decode([input]) == (expected, nil))
        // The same, a byte at a time.
        #expect(try Self.decode(input.map { String($0) }).output == expected)
    }

    @Test func aResponseToHEADHasNoBodyWhateverItsLength() throws {
        let result = try Self.decode(["HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n"], method: .HEAD)
        #expect(result == ("200\r\nContent-Length: 9\r\n\r\n<end>", nil))
    }

    @Test(arguments: [
        ("HTTP/1.1 200 OK\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\n", URLError.Code.badServerResponse),
        ("HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", .badServerResponse),
        ("HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\n", .badServerResponse),
        ("HTTP/1.1 200 OK\rA: b\r\n\r\n", .cannotParseResponse),
        ("HTTP/1.1 200 OK\r\nA: \rb\r\n\r\n", .cannotParseResponse),
        ("garbage", .cannotParseResponse),
        ("HTTP/1.1 20 OK\r\n", .cannotParseResponse),
        ("HTTP/1.1 200OK\r\n", .cannotParseResponse),
        ("HTTP/2.0 200 OK\r\n\r\n", .cannotParseResponse),
        ("HTTP/1.1 200 OK\r\nA : b\r\n\r\n", .cannotParseResponse),
        ("HTTP/1.1 200 OK\r\n: b\r\n\r\n", .cannotParseResponse),
        ("HTTP/1.1 200 OK\r\nA(b): c\r\n\r\n", .cannotParseResponse),
        ("HTTP/1.1 200 OK\r\nNo colon\r\n\r\n", .cannotParseResponse),
        ("HTTP/1.1 200 OK\r\nA: b\u{0}c\r\n\r\n", .cannotParseResponse),
        ("HTTP/1.1 200 O\u{7}K\r\n\r\n", .cannotParseResponse),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", .badServerResponse),
        ("HTTP/1.1 200 OK\r\nA: " + String(repeating: "a", count: 90_000) + "\r\n\r\n", .badServerResponse),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", .badServerResponse),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\r\n", .badServerResponse),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n", .badServerResponse),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffffff\r\n", .badServerResponse),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n", .badServerResponse),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloX\r\n", .badServerResponse),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;a\u{0}\r\nhello\r\n", .badServerResponse),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nT: 1\n\r\n", .badServerResponse),
    ])
    func brokenResponsesAreRejected(input: String, code: URLError.Code) throws {
        let result = try Self.decode([input])
        #expect(result.error?.urlErrorCode == code)
        #expect(!result.output.contains("<end>"))
    }

    @Test func aNewRequestStartsANewResponse() throws {
        let channel = try Self.makeChannel()
        defer { _ = try? channel.finish(acceptAlreadyClosed: true) }
        try channel.writeInbound(ByteBuffer(string: "HTTP/1.1 200 OK\nContent-Length: 2\n\nhi"))
        try channel.writeOutbound(
            HTTPClientRequestPart.head(HTTPRequestHead(version: .http1_1, method: .GET, uri: "/")))
        try channel.writeInbound(ByteBuffer(string: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nho"))
        #expect(
            try Self.rendered(channel)
                == "200\r\nContent-Length: 2\r\n\r\nhi<end>200\r\nContent-Length: 2\r\n\r\nho<end>")
    }

    /// Records the user events that pass, and what came before each.
    final class EventRecorder: ChannelInboundHandler {
        typealias InboundIn = HTTPClientResponsePart
        var log: [String] = []

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head: log.append("head")
            case .body: log.append("body")
            case .end: log.append("end")
            }
        }

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if event is HTTP1ClientCodec.BytesAfterResponse { log.append("bytes after") }
        }
    }

    @Test func bytesAfterAResponseAreAnnouncedBeforeItsEndAndDropped() throws {
        let recorder = EventRecorder()
        let channel = EmbeddedChannel(handlers: [HTTP1ClientCodec(endpoint: Self.endpoint), recorder])
        defer { _ = try? channel.finish(acceptAlreadyClosed: true) }
        try channel.writeOutbound(
            HTTPClientRequestPart.head(HTTPRequestHead(version: .http1_1, method: .GET, uri: "/")))
        try channel.writeInbound(ByteBuffer(string: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi"))
        #expect(recorder.log == ["head", "body", "end"])
        // Bytes while no request waits.
        try channel.writeInbound(ByteBuffer(string: "x"))
        #expect(recorder.log == ["head", "body", "end", "bytes after"])

        let second = EventRecorder()
        let other = EmbeddedChannel(handlers: [HTTP1ClientCodec(endpoint: Self.endpoint), second])
        defer { _ = try? other.finish(acceptAlreadyClosed: true) }
        try other.writeOutbound(HTTPClientRequestPart.head(HTTPRequestHead(version: .http1_1, method: .GET, uri: "/")))
        try other.writeInbound(ByteBuffer(string: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhiHTTP/1.1 200 OK\r\n"))
        #expect(second.log == ["bytes after", "head", "body", "end"])
    }

    @Test func theBytesBehindA101GoToWhoeverTakesTheConnection() throws {
        let channel = try Self.makeChannel()
        try channel.writeInbound(ByteBuffer(string: "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\nab"))
        try channel.writeInbound(ByteBuffer(string: "cd"))
        #expect(try Self.rendered(channel) == "101\r\nUpgrade: websocket\r\n\r\n<end>")
        let codec = try channel.pipeline.syncOperations.handler(type: HTTP1ClientCodec.self)
        _ = channel.pipeline.syncOperations.removeHandler(codec)
        #expect(try channel.readInbound(as: ByteBuffer.self).map { String(buffer: $0) } == "abcd")
        _ = try channel.finish(acceptAlreadyClosed: true)
    }

    @Test func aBodyThatEndsAtTheCloseEndsThereAndOneCutShortFails() throws {
        let whole = try Self.makeChannel()
        try whole.writeInbound(ByteBuffer(string: "HTTP/1.1 200 OK\r\n\r\nall"))
        whole.pipeline.fireChannelInactive()
        #expect(try Self.rendered(whole) == "200\r\n\r\nall<end>")

        for raw in [
            "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nall", "HTTP/1.1 200 OK\r\nContent-",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
        ] {
            let cut = try Self.makeChannel()
            try cut.writeInbound(ByteBuffer(string: raw))
            cut.pipeline.fireChannelInactive()
            #expect(throws: TransferError.self) { try cut.throwIfErrorCaught() }
            let passed = try Self.rendered(cut)
            #expect(!passed.contains("<end>"))
        }
    }

    @Test func requestsAreWrittenAsOneHeadAndChunkedWhenTheyHaveNoLength() throws {
        let channel = EmbeddedChannel(handler: HTTP1ClientCodec(endpoint: Self.endpoint))
        defer { _ = try? channel.finish(acceptAlreadyClosed: true) }
        var headers = HTTPHeaders([("Host", "a.example"), ("Transfer-Encoding", "chunked")])
        try channel.writeOutbound(
            HTTPClientRequestPart.head(
                HTTPRequestHead(version: .http1_1, method: .POST, uri: "/up?x=1", headers: headers)))
        try channel.writeOutbound(HTTPClientRequestPart.body(.byteBuffer(ByteBuffer(string: "hello, world!!!!!"))))
        try channel.writeOutbound(HTTPClientRequestPart.body(.byteBuffer(ByteBuffer())))
        try channel.writeOutbound(HTTPClientRequestPart.end(nil))
        var written = ""
        while let data = try channel.readOutbound(as: IOData.self) {
            guard case .byteBuffer(let buffer) = data else { continue }
            written += String(buffer: buffer)
        }
        #expect(
            written
                == "POST /up?x=1 HTTP/1.1\r\nHost: a.example\r\nTransfer-Encoding: chunked\r\n\r\n11\r\nhello, world!!!!!\r\n0\r\n\r\n"
        )

        headers = HTTPHeaders([("Host", "a.example"), ("Content-Length", "2")])
        try channel.writeOutbound(
            HTTPClientRequestPart.head(HTTPRequestHead(version: .http1_1, method: .PUT, uri: "/", headers: headers)))
        try channel.writeOutbound(HTTPClientRequestPart.body(.byteBuffer(ByteBuffer(string: "hi"))))
        try channel.writeOutbound(HTTPClientRequestPart.end(nil))
        written = ""
        while let data = try channel.readOutbound(as: IOData.self) {
            guard case .byteBuffer(let buffer) = data else { continue }
            written += String(buffer: buffer)
        }
        #expect(written == "PUT / HTTP/1.1\r\nHost: a.example\r\nContent-Length: 2\r\n\r\nhi")
    }

    /// A server that trickles its head a line per read. Each line kept as a slice of the growing buffer once made
    /// every append copy the whole head, and kept each copy alive: 10,000 lines (200 KB) held about 1 GB.
    @Test func aHeadTrickledALinePerReadCostsMemoryLinearInItsLength() throws {
        let channel = try Self.makeChannel()
        defer { _ = try? channel.finish(acceptAlreadyClosed: true) }
        try channel.writeInbound(ByteBuffer(string: "HTTP/1.1 200 OK\r\n"))
        let before = try Self.residentBytes()
        for index in 0..<10_000 {
            try channel.writeInbound(ByteBuffer(string: "X-Line-\(index % 10): trickled\r\n"))
        }
        let grown = try Self.residentBytes() - before
        // The whole process's resident memory, which the suite's other tests grow meanwhile (81 MiB once, in a
        // full run): the bound sits well above that and well below the quadratic case's gigabyte.
        #expect(grown < 384 << 20, "the held head grew the process by \(grown >> 20) MiB")
        // Collected whole, then refused: its fields are over the limit (``HTTP1ResponseHeadParser/maximumFieldBytes``).
        #expect(throws: TransferError.self) {
            try channel.writeInbound(ByteBuffer(string: "Content-Length: 0\r\n\r\n"))
        }
    }

    /// A server that trickles one long header line a few bytes per read. The search for a bare CR once went over
    /// the whole line again on every read: 512 KiB in 8-byte reads scanned some 17 GB, minutes of an event loop
    /// that every other connection on it waits for. Linear, it takes well under a second. Not a speed check: the
    /// bound is a hundred times the linear time (0.56 s in a debug build here) and far below the quadratic one (more
    /// than 400 s), so only the quadratic algorithm can fail it, however loaded the machine.
    @Test func aLineTrickledAFewBytesPerReadCostsTimeLinearInItsLength() throws {
        let channel = try Self.makeChannel()
        defer { _ = try? channel.finish(acceptAlreadyClosed: true) }
        try channel.writeInbound(ByteBuffer(string: "HTTP/1.1 200 OK\r\nX-Long: "))
        let piece = ByteBuffer(string: "abcdefgh")
        let clock = ContinuousClock()
        let elapsed = try clock.measure {
            for _ in 0..<(64 << 10) {
                try channel.writeInbound(piece)
            }
        }
        #expect(elapsed < .seconds(60), "trickling a 512 KiB line took \(elapsed)")
        // Collected whole, then refused: its fields are over the limit (``HTTP1ResponseHeadParser/maximumFieldBytes``).
        #expect(throws: TransferError.self) {
            try channel.writeInbound(ByteBuffer(string: "\r\nContent-Length: 0\r\n\r\n"))
        }
    }

    /// A read packed with informational heads. The exchange's handler fails at the 101st, but the codec went on
    /// through the whole read, copying what followed each head: a 256 KiB read of minimal heads copied gigabytes. It
    /// now stops at the same limit, with the handler's error.
    @Test func aReadOfInformationalHeadsStopsAtTheLimit() throws {
        let flood = String(repeating: "HTTP/1.1 102 \r\n\r\n", count: 1000)
        let result = try Self.decode([flood + "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"])
        #expect(result.error?.urlErrorCode == .badServerResponse)
        let passed = result.output.components(separatedBy: "102\r\n").count - 1
        #expect(passed == InformationalResponseLimit.maximumCount)
        #expect(!result.output.contains("200\r\n"))
    }

    /// The process's resident memory (`/proc/self/statm`, in pages).
    private static func residentBytes() throws -> Int {
        let fields = try String(contentsOfFile: "/proc/self/statm", encoding: .utf8).split(separator: " ")
        return (Int(fields[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}
