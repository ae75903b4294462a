import NIOCore
import NIOEmbedded
import Testing

@testable import CourierTransport

/// Counts the reads that reach the socket.
private final class ReadCounter: ChannelOutboundHandler {
    typealias OutboundIn = Any
    var reads = 0

    func read(context: ChannelHandlerContext) {
        reads += 1
        context.read()
    }
}

private final class IgnoringDelegate: WebSocketConnectionDelegate {
    func webSocketDidReceive(_ message: WebSocketMessage) {}
    func webSocketDidClose(_ closure: WebSocketClosure) {}
}

/// The client handler's read gate, fed reading decisions directly on an `EmbeddedChannel`.
@Suite("WebSocket client handler")
struct WebSocketClientHandlerTests {
    @Test func anOlderReadingDecisionArrivingLateIsIgnored() throws {
        let channel = EmbeddedChannel()
        let counter = ReadCounter()
        let handler = WebSocketClientHandler(maximumMessageSize: 1 << 20, delegate: IgnoringDelegate())
        try channel.pipeline.syncOperations.addHandler(counter)
        try channel.pipeline.syncOperations.addHandler(handler)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()

        // A receive resumed reading (decision 2) before the stop that a message had decided earlier (decision 1)
        // reached the loop: reading stays on. (Applied in arrival order, the stop left a task with no message held
        // and reading off for good: a WebSocket that hung under load.)
        handler.setReading(true, generation: 2)
        handler.setReading(false, generation: 1)
        channel.read()
        #expect(counter.reads == 1)

        // A newer stop holds the next read back until a newer resume lets it through.
        handler.setReading(false, generation: 3)
        channel.read()
        #expect(counter.reads == 1)
        handler.setReading(true, generation: 4)
        #expect(counter.reads == 2)
        _ = try channel.finish(acceptAlreadyClosed: true)
    }
}
