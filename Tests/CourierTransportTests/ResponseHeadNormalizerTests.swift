import CourierHTTP
import Foundation
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

@testable import CourierTransport

@Suite("ResponseHeadNormalizer")
struct ResponseHeadNormalizerTests {
    /// Feeds `pieces` through a normalizer after a request head went out; returns what it passed on, or the
    /// error it raised.
    static func normalize(_ pieces: [String]) throws -> (output: String, error: TransferError?) {
        let channel = EmbeddedChannel(handler: ResponseHeadNormalizer())
        defer { _ = try? channel.finish(acceptAlreadyClosed: true) }
        try channel.writeOutbound(
            HTTPClientRequestPart.head(HTTPRequestHead(version: .http1_1, method: .GET, uri: "/")))
        var output = ""
        var error: TransferError?
        for piece in pieces {
            do {
                try channel.writeInbound(ByteBuffer(string: piece))
            } catch let caught as TransferError {
                error = caught
            }
            while let buffer = try channel.readInbound(as: ByteBuffer.self) {
                output += String(buffer: buffer)
            }
        }
        return (output, error)
    }

    @Test(arguments: [
        ("HTTP/1.1 200 OK\nA: b\n\nbody", "HTTP/1.1 200 OK\r\nA: b\r\n\r\nbody"),
        ("HTTP/1.1 200 OK\r\nA: b\n\r\nbody\nstays\r", "HTTP/1.1 200 OK\r\nA: b\r\n\r\nbody\nstays\r"),
        (
            "HTTP/1.1 200 OK\r\nContent-Length: 4\r\ncontent-length: 4\r\n\r\nbody",
            "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nbody"
        ),
        ("HTTP/1.1 200 OK\r\nContent-Length: 4 ,4\r\n\r\nbody", "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nbody"),
        ("HTTP/1.1 204\r\n\r\n", "HTTP/1.1 204\r\n\r\n"),
        ("\nHTTP/1.1 200 OK\n\n", "HTTP/1.1 200 OK\r\n\r\n"),
        // A leading bare LF and a bare-LF line end add up to the byte count of a strict head: still rewritten.
        ("\nHTTP/1.1 200 OK\nA: b\r\n\r\n", "HTTP/1.1 200 OK\r\nA: b\r\n\r\n"),
        (
            "HTTP/1.1 100 Continue\n\nHTTP/1.1 200 OK\nA: b\n\n\n",
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nA: b\r\n\r\n\n"
        ),
    ])
    func headsAreRewrittenAndBodiesPassUntouched(input: String, expected: String) throws {
        #expect(try Self.normalize([input]) == (expected, nil))
        // The same, a byte at a time.
        let bytes = input.map { String($0) }
        #expect(try Self.normalize(bytes).output == expected)
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
    ])
    func brokenHeadsAreRejected(input: String, code: URLError.Code) throws {
        let result = try Self.normalize([input])
        #expect(result.error?.urlErrorCode == code)
        #expect(result.output.isEmpty)
    }

    @Test func aNewRequestStartsANewHeadPhase() throws {
        let channel = EmbeddedChannel(handler: ResponseHeadNormalizer())
        defer { _ = try? channel.finish(acceptAlreadyClosed: true) }
        let request = HTTPClientRequestPart.head(HTTPRequestHead(version: .http1_1, method: .GET, uri: "/"))
        var received = ""
        for _ in 0..<2 {
            try channel.writeOutbound(request)
            try channel.writeInbound(ByteBuffer(string: "HTTP/1.1 200 OK\nContent-Length: 2\n\nhi"))
            while let buffer = try channel.readInbound(as: ByteBuffer.self) { received += String(buffer: buffer) }
        }
        #expect(received == String(repeating: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi", count: 2))
    }

    @Test(arguments: [
        (HTTPParserError.invalidConstant, URLError.Code.cannotParseResponse),
        (.invalidCharactersUsed, .cannotParseResponse),
        (.invalidVersion, .cannotParseResponse),
        (.lfExpected, .cannotParseResponse),
        (.invalidHeaderToken, .cannotParseResponse),
        (.strictModeAssertion, .cannotParseResponse),
        (.invalidStatus, .badServerResponse),
        (.invalidContentLength, .badServerResponse),
        (.unexpectedContentLength, .badServerResponse),
        (.invalidChunkSize, .badServerResponse),
        (.headerOverflow, .badServerResponse),
        (.invalidEOFState, .networkConnectionLost),
    ])
    func parserErrorsMapToDarwinCodes(error: HTTPParserError, code: URLError.Code) {
        let endpoint = Endpoint(scheme: .http, host: "a.example", port: 80)
        #expect(TransportErrorMapping.exchangeError(error, endpoint: endpoint).urlErrorCode == code)
    }

    @Test func aStrictReadPassesAsOneBufferWithItsBody() throws {
        let channel = EmbeddedChannel(handler: ResponseHeadNormalizer())
        defer { _ = try? channel.finish(acceptAlreadyClosed: true) }
        try channel.writeOutbound(
            HTTPClientRequestPart.head(HTTPRequestHead(version: .http1_1, method: .GET, uri: "/")))
        let read = "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nbody"
        try channel.writeInbound(ByteBuffer(string: read))
        #expect(try channel.readInbound(as: ByteBuffer.self).map { String(buffer: $0) } == read)
        #expect(try channel.readInbound(as: ByteBuffer.self) == nil)
    }

    /// A server that trickles its head a line per read. Each line kept as a slice of the growing buffer once made
    /// every append copy the whole head, and kept each copy alive: 10,000 lines (200 KB) held about 1 GB.
    @Test func aHeadTrickledALinePerReadCostsMemoryLinearInItsLength() throws {
        let channel = EmbeddedChannel(handler: ResponseHeadNormalizer())
        defer { _ = try? channel.finish(acceptAlreadyClosed: true) }
        try channel.writeOutbound(
            HTTPClientRequestPart.head(HTTPRequestHead(version: .http1_1, method: .GET, uri: "/")))
        try channel.writeInbound(ByteBuffer(string: "HTTP/1.1 200 OK\r\n"))
        let before = try Self.residentBytes()
        for index in 0..<10_000 {
            try channel.writeInbound(ByteBuffer(string: "X-Line-\(index % 10): trickled\r\n"))
        }
        let grown = try Self.residentBytes() - before
        // The whole process's resident memory, which the suite's other tests grow meanwhile (81 MiB once, in a
        // full run): the bound sits well above that and well below the quadratic case's gigabyte.
        #expect(grown < 384 << 20, "the held head grew the process by \(grown >> 20) MiB")
        try channel.writeInbound(ByteBuffer(string: "Content-Length: 0\r\n\r\n"))
        var passed = 0
        while let buffer = try channel.readInbound(as: ByteBuffer.self) { passed += buffer.readableBytes }
        #expect(passed > 200_000)
    }

    /// A server that trickles one long header line a few bytes per read. The search for a bare CR once went over
    /// the whole line again on every read: 512 KiB in 8-byte reads scanned some 17 GB, minutes of an event loop
    /// that every other connection on it waits for. Linear, it takes well under a second. Not a speed check: the
    /// bound is a hundred times the linear time (0.56 s in a debug build here) and far below the quadratic one (more
    /// than 400 s), so only the quadratic algorithm can fail it, however loaded the machine.
    @Test func aLineTrickledAFewBytesPerReadCostsTimeLinearInItsLength() throws {
        let channel = EmbeddedChannel(handler: ResponseHeadNormalizer())
        defer { _ = try? channel.finish(acceptAlreadyClosed: true) }
        try channel.writeOutbound(
            HTTPClientRequestPart.head(HTTPRequestHead(version: .http1_1, method: .GET, uri: "/")))
        try channel.writeInbound(ByteBuffer(string: "HTTP/1.1 200 OK\r\nX-Long: "))
        let piece = ByteBuffer(string: "abcdefgh")
        let clock = ContinuousClock()
        let elapsed = try clock.measure {
            for _ in 0..<(64 << 10) {
                try channel.writeInbound(piece)
            }
        }
        #expect(elapsed < .seconds(60), "trickling a 512 KiB line took \(elapsed)")
        try channel.writeInbound(ByteBuffer(string: "\r\nContent-Length: 0\r\n\r\n"))
        var passed = 0
        while let buffer = try channel.readInbound(as: ByteBuffer.self) { passed += buffer.readableBytes }
        #expect(passed > 512 << 10)
    }

    /// A read packed with informational heads. The exchange's handler fails at the 101st, but the normalizer went on
    /// through the whole read, copying what followed each head: a 256 KiB read of minimal heads copied gigabytes. It
    /// now stops at the same limit, with the handler's error.
    @Test func aReadOfInformationalHeadsStopsAtTheLimit() throws {
        let flood = String(repeating: "HTTP/1.1 102 \r\n\r\n", count: 1000)
        let result = try Self.normalize([flood + "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"])
        #expect(result.error?.urlErrorCode == .badServerResponse)
        let passed = result.output.components(separatedBy: "HTTP/1.1 102").count - 1
        #expect(passed == InformationalResponseLimit.maximumCount)
        #expect(!result.output.contains("HTTP/1.1 200"))
    }

    /// The process's resident memory (`/proc/self/statm`, in pages).
    private static func residentBytes() throws -> Int {
        let fields = try String(contentsOfFile: "/proc/self/statm", encoding: .utf8).split(separator: " ")
        return (Int(fields[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}
