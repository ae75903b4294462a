import CourierHTTP
import Foundation
import NIOCore
import NIOEmbedded
import Testing

@testable import CourierTransport

@Suite("HTTP1RequestBodyWriter")
struct HTTP1RequestBodyWriterTests {
    private static func expectContinueRequest() throws -> TransportRequest {
        try HTTP1TestPipeline.request(
            "POST",
            headers: [("Expect", "100-continue")],
            body: .bytes(ByteBuffer(string: "payload"))
        )
    }

    /// With `Expect: 100-continue` only the head goes out; the body follows when `100 Continue` arrives, and the
    /// exchange then ends normally with the connection reusable.
    @Test func expectContinueHoldsTheBodyUntilContinue() throws {
        let harness = try HTTP1Harness()
        let consumer = RecordingConsumer()
        _ = try harness.start(Self.expectContinueRequest(), consumer: consumer)
        let head = try SentHead(harness.sent())
        #expect(head.values("Expect") == ["100-continue"])
        #expect(head.values("Content-Length") == ["7"])
        #expect(head.body.isEmpty)
        harness.loop.advanceTime(by: .milliseconds(500))
        #expect(try harness.sent().isEmpty)

        try harness.receive("HTTP/1.1 100 Continue\r\n\r\n")
        #expect(try harness.sent() == "payload")
        #expect(consumer.events == [.sent(7)])
        try harness.receive("HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")
        #expect(consumer.events == [.sent(7), .head(201), .finished])
        #expect(harness.reusableCount == 1)
        try harness.finish()
    }

    /// When no `100 Continue` comes, the body is sent anyway after the continue timeout.
    @Test func bodyIsSentWhenNoContinueComesInTime() throws {
        let harness = try HTTP1Harness()
        _ = try harness.start(Self.expectContinueRequest(), consumer: RecordingConsumer())
        _ = try harness.sent()
        harness.loop.advanceTime(by: HTTP1RequestBodyWriter.continueTimeout - .milliseconds(1))
        #expect(try harness.sent().isEmpty)
        harness.loop.advanceTime(by: .milliseconds(1))
        #expect(try harness.sent() == "payload")
        try harness.finish()
    }

    /// A final response instead of `100 Continue` is delivered; the body is never sent, and since the server did
    /// not get the request it announced, the connection is closed rather than reused.
    @Test func finalResponseInsteadOfContinueSkipsTheBody() throws {
        let harness = try HTTP1Harness()
        let consumer = RecordingConsumer()
        _ = try harness.start(Self.expectContinueRequest(), consumer: consumer)
        _ = try harness.sent()
        try harness.receive("HTTP/1.1 417 Expectation Failed\r\nContent-Length: 0\r\n\r\n")
        #expect(consumer.events == [.head(417), .finished])
        #expect(harness.reusableCount == 0)
        #expect(!harness.channel.isActive)
        harness.loop.advanceTime(by: .seconds(2))
        #expect(try harness.sent().isEmpty)
        try harness.finish()
    }

    /// A stream body of unknown length is sent chunked: `Transfer-Encoding: chunked` in place of an app-set
    /// `Content-Length`, each chunk framed, then the last chunk. The stream is read with Swift concurrency, off
    /// the loop, which the single-threaded `EmbeddedEventLoop` cannot host: this test uses NIOEmbedded's
    /// thread-safe `NIOAsyncTestingChannel` with the same pipeline.
    @Test(.timeLimit(.minutes(1)))
    func streamOfUnknownLengthIsSentChunked() async throws {
        let loop = NIOAsyncTestingEventLoop()
        let channel = NIOAsyncTestingChannel(loop: loop)
        let connection = try await loop.executeInContext {
            let handler = HTTP1TestPipeline.makeHandler()
            try HTTP1TestPipeline.add(to: channel.pipeline.syncOperations, socket: nil, client: handler)
            return HTTP1Connection(
                id: 1,
                key: PoolKey(request: try HTTP1TestPipeline.request()),
                channel: channel,
                handler: NIOLoopBound(handler, eventLoop: loop)
            )
        }
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 80))
        let pool = HTTP1TestPipeline.makePool(group: loop)
        let consumer = RecordingConsumer()
        let source = ChunkedSource(chunks: ["hello", " world"])
        let request = try HTTP1TestPipeline.request(
            "PUT",
            headers: [("Content-Length", "3")],
            body: .stream(length: nil, source: source)
        )
        let exchange = TransportExchange(request: request, consumer: consumer, pool: pool)
        #expect(exchange.attach(connection))
        connection.execute(exchange, isReused: false)

        // The writer closes the reader on the loop just before it writes the end; whatever the loop does next
        // comes after that write. (Waiting this way, unlike for a write that never comes, ends at the time limit.)
        var closed = source.closed.makeAsyncIterator()
        #expect(await closed.next() != nil)
        var sent = ""
        while let buffer = try await channel.readOutbound(as: ByteBuffer.self) {
            sent += String(buffer: buffer)
        }
        let head = try SentHead(sent)
        #expect(head.requestLine == "PUT / HTTP/1.1")
        #expect(head.values("Transfer-Encoding") == ["chunked"])
        #expect(head.values("Content-Length").isEmpty)
        #expect(head.body == "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")

        try await channel.writeInbound(ByteBuffer(string: "HTTP/1.1 204 No Content\r\n\r\n"))
        #expect(consumer.events == [.sent(5), .sent(11), .head(204), .finished])
        pool.shutdown()
        _ = try await channel.finish(acceptAlreadyClosed: true)
    }
}
