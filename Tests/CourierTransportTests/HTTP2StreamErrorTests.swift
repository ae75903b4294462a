import CourierMockServer
import Foundation
import NIOCore
import NIOEmbedded
import NIOHTTP2
import Testing

@testable import CourierTransport

/// NIOHTTP2's own handler, the monitor and the stream multiplexer on an embedded channel, fed a server's frames as
/// bytes: how a stream error meets a connection that cannot write for the moment (a large upload filling the socket).
@Suite("HTTP/2 stream errors")
struct HTTP2StreamErrorTests {
    @Test func aStreamErrorWhileTheConnectionCannotWriteLeavesTheConnectionOpen() throws {
        let loop = EmbeddedEventLoop()
        let channel = EmbeddedChannel(loop: loop)
        defer { _ = try? channel.finish(acceptAlreadyClosed: true) }
        let monitor = HTTP2ConnectionMonitor(ready: loop.makePromise(), timing: .init(idleTimeout: .seconds(60)))
        let multiplexer = HTTP2StreamMultiplexer(mode: .client, channel: channel, inboundStreamInitializer: nil)
        let sync = channel.pipeline.syncOperations
        try sync.addHandler(
            NIOHTTP2Handler(mode: .client, connectionConfiguration: HTTP2Tuning.connectionConfiguration))
        try sync.addHandler(monitor)
        try sync.addHandler(multiplexer)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).wait()
        try channel.writeInbound(ByteBuffer(bytes: HTTP2RawFrame.settings([])))

        let created = loop.makePromise(of: (any Channel).self)
        multiplexer.createStreamChannel(promise: created) { stream in stream.eventLoop.makeSucceededVoidFuture() }
        loop.run()
        let stream = try created.futureResult.wait()
        let request: [(String, String)] = [
            (":method", "GET"), (":scheme", "https"), (":authority", "localhost"), (":path", "/"),
        ]
        let head = HTTP2Frame.FramePayload.Headers(headers: .init(request), endStream: true)
        stream.writeAndFlush(HTTP2Frame.FramePayload.headers(head), promise: nil)
        loop.run()

        channel.isWritable = false
        channel.pipeline.fireChannelWritabilityChanged()
        // A content-length the DATA frames contradict: a stream error, answered with RST_STREAM, which waits.
        let response =
            HTTP2RawFrame.headers(
                streamID: 1, fields: [(name: ":status", value: "200"), (name: "content-length", value: "10")])
            + HTTP2RawFrame.frame(
                type: HTTP2RawFrame.FrameType.data, flags: HTTP2RawFrame.Flag.endStream, streamID: 1,
                payload: Array("abc".utf8))
        try channel.writeInbound(ByteBuffer(bytes: response))
        loop.run()
        #expect(channel.isActive, "a stream error must not close the connection")
        #expect(stream.isActive)

        channel.isWritable = true
        channel.pipeline.fireChannelWritabilityChanged()
        loop.run()
        // The reset went out: its stream closed, the connection and its other streams go on.
        #expect(!stream.isActive)
        #expect(channel.isActive)
    }

    /// A POST whose body waits for the server's flow-control window when the server refuses the stream
    /// (`REFUSED_STREAM`: it processed nothing) is sent again on another connection, as RFC 9113 §8.7 allows whatever
    /// the method. NIOHTTP2 fails the body's pending write before the stream's channel hears of the reset; that failure
    /// must not end the exchange as a lost connection. The pool is shut down, so the retry's lease is what fails,
    /// with the pool's own error.
    @Test func aStreamRefusedWhileItsBodyWaitsForTheWindowIsRetried() throws {
        let loop = EmbeddedEventLoop()
        let channel = EmbeddedChannel(loop: loop)
        defer { _ = try? channel.finish(acceptAlreadyClosed: true) }
        let monitor = HTTP2ConnectionMonitor(ready: loop.makePromise(), timing: .init(idleTimeout: .seconds(60)))
        let multiplexer = HTTP2StreamMultiplexer(mode: .client, channel: channel, inboundStreamInitializer: nil)
        let sync = channel.pipeline.syncOperations
        try sync.addHandler(
            NIOHTTP2Handler(
                mode: .client, frameDelegate: monitor, connectionConfiguration: HTTP2Tuning.connectionConfiguration))
        try sync.addHandler(monitor)
        try sync.addHandler(multiplexer)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).wait()
        // The server's SETTINGS leave the default windows: 65 535 bytes for the stream and the connection.
        try channel.writeInbound(ByteBuffer(bytes: HTTP2RawFrame.settings([])))
        loop.run()

        let url = try #require(URL(string: "https://example.test/upload"))
        let request = try TransportRequest(
            method: "POST", url: url, headers: [], body: .bytes(ByteBuffer(repeating: 0x61, count: 100_000)),
            idleTimeout: .seconds(30), tls: TLSSettings())
        let connection = HTTP2Connection(
            id: 1, key: PoolKey(request: request), channel: channel, capacity: 100, multiplexer: multiplexer,
            monitor: monitor, establishment: ConnectionEstablishment(), idleConnectionTimeout: .seconds(60))
        let pool = HTTP1TestPipeline.makePool(group: loop)
        pool.shutdown()
        let consumer = RecordingConsumer()
        let exchange = TransportExchange(request: request, consumer: consumer, pool: pool)
        try #require(exchange.attach(connection))
        connection.execute(exchange, isReused: false)
        loop.run()
        #expect(!consumer.finished && consumer.error == nil, "the body's end waits for a window update")

        let refused = HTTP2RawFrame.frame(
            type: HTTP2RawFrame.FrameType.rstStream, streamID: 1, payload: [0, 0, 0, 0x7])  // REFUSED_STREAM
        try channel.writeInbound(ByteBuffer(bytes: refused))
        loop.run()
        #expect(consumer.events.last == .failed(.cancelled))
        #expect(consumer.error?.detail == "the session was invalidated")
        #expect(channel.isActive, "a refused stream leaves the connection open")
    }

    /// RFC 9113 §8.1: a server may answer before it has read the request's body, and then reset the stream with
    /// `NO_ERROR` to stop the upload; the client must not discard the response for that reset. Here the body still
    /// waits for the server's window and the response is compressed, so its end arrives before it is all decoded:
    /// the reset that follows must leave it to be decoded and delivered whole.
    @Test func aNoErrorResetAfterACompleteResponseDoesNotDiscardIt() throws {
        let loop = EmbeddedEventLoop()
        let channel = EmbeddedChannel(loop: loop)
        defer { _ = try? channel.finish(acceptAlreadyClosed: true) }
        let monitor = HTTP2ConnectionMonitor(ready: loop.makePromise(), timing: .init(idleTimeout: .seconds(60)))
        let multiplexer = HTTP2StreamMultiplexer(mode: .client, channel: channel, inboundStreamInitializer: nil)
        let sync = channel.pipeline.syncOperations
        try sync.addHandler(
            NIOHTTP2Handler(
                mode: .client, frameDelegate: monitor, connectionConfiguration: HTTP2Tuning.connectionConfiguration))
        try sync.addHandler(monitor)
        try sync.addHandler(multiplexer)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).wait()
        // The server's SETTINGS leave the default windows: the 100 000-byte body cannot go out whole.
        try channel.writeInbound(ByteBuffer(bytes: HTTP2RawFrame.settings([])))
        loop.run()

        let url = try #require(URL(string: "https://example.test/upload"))
        var request = try TransportRequest(
            method: "POST", url: url, headers: [], body: .bytes(ByteBuffer(repeating: 0x61, count: 100_000)),
            idleTimeout: .seconds(30), tls: TLSSettings())
        // Zeros deflate beyond the default decompression guard; the reset is what this test is about.
        request.maximumDecompressionRatio = nil
        let connection = HTTP2Connection(
            id: 1, key: PoolKey(request: request), channel: channel, capacity: 100, multiplexer: multiplexer,
            monitor: monitor, establishment: ConnectionEstablishment(), idleConnectionTimeout: .seconds(60))
        let pool = HTTP1TestPipeline.makePool(group: loop)
        defer { pool.shutdown() }
        let consumer = RecordingConsumer()
        let exchange = TransportExchange(request: request, consumer: consumer, pool: pool)
        try #require(exchange.attach(connection))
        connection.execute(exchange, isReused: false)
        loop.run()

        let size = 1 << 20
        let compressed = Deflater.gzipZeros(count: size)
        let fields = [
            (name: ":status", value: "413"), (name: "content-encoding", value: "gzip"),
            (name: "content-length", value: String(compressed.count)),
        ]
        let answer =
            HTTP2RawFrame.headers(streamID: 1, fields: fields)
            + HTTP2RawFrame.frame(
                type: HTTP2RawFrame.FrameType.data, flags: HTTP2RawFrame.Flag.endStream, streamID: 1,
                payload: compressed)
            + HTTP2RawFrame.frame(
                type: HTTP2RawFrame.FrameType.rstStream, streamID: 1, payload: [0, 0, 0, 0])  // NO_ERROR
        try channel.writeInbound(ByteBuffer(bytes: answer))
        loop.run()
        #expect(consumer.error == nil)
        #expect(consumer.heads.map(\.status) == [413])
        #expect(consumer.body.utf8.count == size)
        #expect(consumer.finished)
        #expect(channel.isActive, "a reset stream leaves the connection open")
    }

    /// Holds the connection's close back, as TLS does while its `close_notify` goes out and the peer's is awaited:
    /// the channel stays active meanwhile.
    final class CloseHolder: ChannelOutboundHandler {
        typealias OutboundIn = Any
        private var context: ChannelHandlerContext?
        private var held: [EventLoopPromise<Void>?] = []
        private var holding = true

        func handlerAdded(context: ChannelHandlerContext) {
            self.context = context
        }

        func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
            guard holding else {
                context.close(mode: mode, promise: promise)
                return
            }
            held.append(promise)
        }

        /// Lets the held closes through, and any later one.
        func letGo() {
            holding = false
            let promises = held
            held = []
            for promise in promises { context?.close(promise: promise) }
        }
    }

    /// The server resets the request's stream and breaks the protocol in the same read (DATA on stream 0): the first
    /// exchange fails as the reset passes, and the app may lease the connection again, off the event loop, before the
    /// connection error of the rest of that read takes it out of the pool. The exchange so leased must not be put on
    /// the connection NIOHTTP2 sent GOAWAY on and is closing (its close held back, as TLS's `close_notify` does): it
    /// sent nothing, so it goes to another connection whatever its method (RFC 9113 §8.7). The pool is shut down, so
    /// the retry's lease is what fails, with the pool's own error.
    @Test func aRequestLeasedAsTheConnectionClosesForTheServersErrorIsRetriedElsewhere() throws {
        let loop = EmbeddedEventLoop()
        let channel = EmbeddedChannel(loop: loop)
        let holder = CloseHolder()
        defer {
            holder.letGo()
            _ = try? channel.finish(acceptAlreadyClosed: true)
        }
        let monitor = HTTP2ConnectionMonitor(ready: loop.makePromise(), timing: .init(idleTimeout: .seconds(60)))
        let multiplexer = HTTP2StreamMultiplexer(mode: .client, channel: channel, inboundStreamInitializer: nil)
        let sync = channel.pipeline.syncOperations
        try sync.addHandler(holder)
        try sync.addHandler(
            NIOHTTP2Handler(
                mode: .client, frameDelegate: monitor, connectionConfiguration: HTTP2Tuning.connectionConfiguration))
        try sync.addHandler(monitor)
        try sync.addHandler(multiplexer)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).wait()
        try channel.writeInbound(ByteBuffer(bytes: HTTP2RawFrame.settings([])))
        loop.run()

        let url = try #require(URL(string: "https://example.test/hostile"))
        let first = try TransportRequest(
            method: "GET", url: url, headers: [], body: .none, idleTimeout: .seconds(30), tls: TLSSettings())
        let connection = HTTP2Connection(
            id: 1, key: PoolKey(request: first), channel: channel, capacity: 100, multiplexer: multiplexer,
            monitor: monitor, establishment: ConnectionEstablishment(), idleConnectionTimeout: .seconds(60))
        let pool = HTTP1TestPipeline.makePool(group: loop)
        pool.shutdown()
        let firstConsumer = RecordingConsumer()
        let firstExchange = TransportExchange(request: first, consumer: firstConsumer, pool: pool)
        try #require(firstExchange.attach(connection))
        connection.execute(firstExchange, isReused: false)
        loop.run()

        // One read: RST_STREAM (INTERNAL_ERROR) on the request's stream, then DATA on stream 0.
        let hostile =
            HTTP2RawFrame.frame(type: HTTP2RawFrame.FrameType.rstStream, streamID: 1, payload: [0, 0, 0, 2])
            + HTTP2RawFrame.frame(type: HTTP2RawFrame.FrameType.data, streamID: 0, payload: [1, 2, 3])
        try channel.writeInbound(ByteBuffer(bytes: hostile))
        loop.run()
        #expect(firstConsumer.events.last == .failed(.networkConnectionLost))
        #expect(channel.isActive, "the close is held back")

        // Leased before the pool heard of the connection error; it runs on the loop after that read.
        let second = try TransportRequest(
            method: "POST", url: url, headers: [], body: .bytes(ByteBuffer(string: "x")), idleTimeout: .seconds(30),
            tls: TLSSettings())
        let secondConsumer = RecordingConsumer()
        let secondExchange = TransportExchange(request: second, consumer: secondConsumer, pool: pool)
        try #require(secondExchange.attach(connection))
        connection.execute(secondExchange, isReused: true)
        loop.run()
        #expect(secondConsumer.events.last == .failed(.cancelled), "\(secondConsumer.events)")
        #expect(secondConsumer.error?.detail == "the session was invalidated")
    }
}
