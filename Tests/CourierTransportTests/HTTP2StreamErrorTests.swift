import CourierMockServer
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
}
