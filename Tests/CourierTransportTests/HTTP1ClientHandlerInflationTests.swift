import CourierHTTP
import CourierMockServer
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

@testable import CourierTransport

/// Counts the `read` calls that pass towards the socket.
private final class ReadCounter: ChannelOutboundHandler {
    typealias OutboundIn = NIOAny
    var reads = 0

    func read(context: ChannelHandlerContext) {
        reads += 1
        context.read()
    }
}

/// A consumer that can pause the handler from inside a body event, as the engine's consumers do.
private final class SteppingConsumer: TransportResponseConsumer, @unchecked Sendable {
    var body = 0
    var parts: [Int] = []
    var finished = false
    var error: TransferError?
    var onPart: (() -> Void)?

    func transportDidSendBodyData(bytesSent: Int64, totalBytesSent: Int64) {}
    func transportDidReceiveHead(_ head: TransportResponseHead) {}
    func transportDidReceiveBodyPart(_ part: ByteBuffer) {
        body += part.readableBytes
        parts.append(part.readableBytes)
        onPart?()
    }
    func transportDidFinish() { finished = true }
    func transportDidFail(_ error: TransferError) { self.error = error }
}

@Suite("HTTP1ClientHandler inflates at the consumer's pace")
struct HTTP1ClientHandlerInflationTests {
    @Test func whilePausedNoMoreThanOneStepIsInflatedAndNothingIsRead() throws {
        let loop = EmbeddedEventLoop()
        let counter = ReadCounter()
        let handler = HTTP1ClientHandler(
            endpoint: Endpoint(scheme: .http, host: "127.0.0.1", port: 80),
            idleConnectionTimeout: .seconds(60),
            protocolName: "http/1.1"
        )
        let channel = EmbeddedChannel(loop: loop)
        try channel.pipeline.syncOperations.addHandlers([counter, handler])
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 80)).wait()
        let factory = ConnectionFactory(
            group: loop, tlsContexts: TLSContextCache(), idleConnectionTimeout: .seconds(60))
        let pool = ConnectionPool(factory: factory, maxConnectionsPerHost: 1, logger: Logger(label: "test"))
        let consumer = SteppingConsumer()
        var request = try makeRequest(#require(URL(string: "http://127.0.0.1/zeros")))
        // Zeros deflate beyond the default decompression guard; pacing is what this test is about.
        request.maximumDecompressionRatio = nil
        let exchange = TransportExchange(request: request, consumer: consumer, pool: pool)
        handler.start(exchange, isReused: false)
        // Pause at every part, as a slow reader's buffer would.
        consumer.onPart = { handler.setPaused(true, for: exchange) }

        let size = 4 << 20
        let compressed = Deflater.gzipZeros(count: size)
        var head = HTTPResponseHead(version: .http1_1, status: .ok)
        head.headers.add(name: "Content-Encoding", value: "gzip")
        head.headers.add(name: "Content-Length", value: String(compressed.count))
        try channel.writeInbound(HTTPClientResponsePart.head(head))
        try channel.writeInbound(HTTPClientResponsePart.body(ByteBuffer(bytes: compressed)))
        try channel.writeInbound(HTTPClientResponsePart.end(nil))
        channel.read()
        loop.run()
        // One step, then the pause: the rest stays compressed, and the socket is not read.
        #expect(consumer.parts == [ContentDecoder.stepSize])
        let readsBefore = counter.reads

        handler.setPaused(false, for: exchange)
        loop.run()
        #expect(consumer.parts == [ContentDecoder.stepSize, ContentDecoder.stepSize])
        #expect(counter.reads == readsBefore)
        #expect(!consumer.finished)

        // Unpaused, the rest follows in steps, the response ends and the held-back read goes out.
        consumer.onPart = nil
        handler.setPaused(false, for: exchange)
        handler.setPaused(true, for: exchange)
        handler.setPaused(false, for: exchange)
        loop.run()
        #expect(consumer.body == size)
        #expect(consumer.parts.allSatisfy { $0 <= ContentDecoder.stepSize })
        #expect(consumer.finished)
        #expect(consumer.error == nil)
        #expect(counter.reads == readsBefore + 1)
        _ = try channel.finish(acceptAlreadyClosed: true)
    }
}
