import NIOCore
import NIOEmbedded
import NIOWebSocket
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

/// Records what a connection reports, in order (everything runs on the embedded loop, on the test's thread).
private final class RecordingDelegate: WebSocketConnectionDelegate, @unchecked Sendable {
    enum Event: Equatable {
        case message(String)
        case closed(code: UInt16?, reason: String, failed: Bool)
    }

    var events: [Event] = []

    func webSocketDidReceive(_ message: WebSocketMessage) {
        switch message {
        case .text(let text): events.append(.message(text))
        case .binary(let bytes): events.append(.message("\(bytes.readableBytes) bytes"))
        }
    }

    func webSocketDidClose(_ closure: WebSocketClosure) {
        let reason = String(decoding: closure.reason, as: UTF8.self)
        events.append(.closed(code: closure.code, reason: reason, failed: closure.error != nil))
    }
}

/// Keeps the frames written and their promises, as a socket whose peer reads nothing: no write completes until
/// the test says so.
private final class HeldWrites: ChannelOutboundHandler {
    typealias OutboundIn = WebSocketFrame
    var frames: [WebSocketFrame] = []
    var promises: [EventLoopPromise<Void>?] = []

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        frames.append(unwrapOutboundIn(data))
        promises.append(promise)
    }

    func flush(context: ChannelHandlerContext) {}

    /// Lets the oldest held write complete.
    func completeOldest() {
        promises.removeFirst()?.succeed()
    }
}

/// An upgraded connection as the transport leaves it after a `101`: an upgrade buffer holding what came behind it.
private func upgradedConnection(holding bytes: [UInt8]) throws -> (EmbeddedChannel, UpgradedConnection) {
    let channel = EmbeddedChannel()
    let buffer = UpgradeBuffer()
    try channel.pipeline.syncOperations.addHandler(buffer)
    try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
    if !bytes.isEmpty { try channel.writeInbound(channel.allocator.buffer(bytes: bytes)) }
    return (channel, UpgradedConnection(channel: channel, buffer: buffer))
}

/// A client handler on a connected `EmbeddedChannel`, behind `outbound` (which sees its reads and writes).
private func connectedHandler(behind outbound: any ChannelHandler) throws -> (EmbeddedChannel, WebSocketClientHandler) {
    let channel = EmbeddedChannel()
    let handler = WebSocketClientHandler(
        maximumMessageSize: 1 << 20, closeTimeout: WebSocketConnection.closeTimeout, delegate: IgnoringDelegate())
    try channel.pipeline.syncOperations.addHandler(outbound)
    try channel.pipeline.syncOperations.addHandler(handler)
    try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
    return (channel, handler)
}

/// The client handler's read gate, fed reading decisions directly on an `EmbeddedChannel`.
@Suite("WebSocket client handler")
struct WebSocketClientHandlerTests {
    @Test func anOlderReadingDecisionArrivingLateIsIgnored() throws {
        let counter = ReadCounter()
        let (channel, handler) = try connectedHandler(behind: counter)

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

    /// The server sent a message and its close frame right behind the `101`, then closed the connection, all before
    /// the task took the connection over (the handlers went in after the end, before NIO tore the pipeline down):
    /// the message and the close handshake are reported, in order, not a lost connection followed by a message.
    @Test func framesThatCameBeforeTheEndOfAClosedConnectionAreReadFirst() throws {
        let text: [UInt8] = [0x81, 0x02] + Array("hi".utf8)
        let close: [UInt8] = [0x88, 0x05, 0x03, 0xE8] + Array("bye".utf8)
        let (channel, upgraded) = try upgradedConnection(holding: text + close)
        let delegate = RecordingDelegate()
        _ = WebSocketConnection.start(upgraded, maximumMessageSize: 1 << 20, delegate: delegate)
        channel.close(promise: nil)
        channel.embeddedEventLoop.run()
        #expect(delegate.events == [.message("hi"), .closed(code: 1000, reason: "bye", failed: false)])
    }

    /// The server closed the connection so early that NIO had torn its pipeline down before the task took it over
    /// (the task's handshake ended late: a slow cookie storage, a delegate): the owner still hears the end, once,
    /// instead of waiting forever for handlers that could never be installed.
    @Test func aConnectionWhosePipelineIsGoneIsReportedLost() throws {
        let (channel, upgraded) = try upgradedConnection(holding: [])
        channel.close(promise: nil)
        channel.embeddedEventLoop.run()  // NIO removes the handlers of a closed channel on the next loop turn
        let delegate = RecordingDelegate()
        _ = WebSocketConnection.start(upgraded, maximumMessageSize: 1 << 20, delegate: delegate)
        channel.embeddedEventLoop.run()
        #expect(delegate.events == [.closed(code: nil, reason: "", failed: true)])
    }

    /// A server that streams pings and reads nothing: each ping queued a pong of its own, without limit. While a pong
    /// is going out, only the latest ping waits for an answer (RFC 6455 §5.5.3).
    @Test func pingsThatComeWhileAPongIsGoingOutAreAnsweredOnceByTheLatest() throws {
        let held = HeldWrites()
        let (channel, _) = try connectedHandler(behind: held)
        for index in 0..<1000 {
            let ping = WebSocketFrame(fin: true, opcode: .ping, data: ByteBuffer(string: "\(index)"))
            try channel.writeInbound(ping)
        }
        #expect(held.frames.count == 1)
        held.completeOldest()
        channel.embeddedEventLoop.run()
        #expect(held.frames.count == 2)
        #expect(held.frames.map { $0.opcode } == [.pong, .pong])
        #expect(held.frames.last.map { String(buffer: $0.data) } == "999")  // masked by the encoder, later
        held.completeOldest()
        channel.embeddedEventLoop.run()
        #expect(held.frames.count == 2)
        _ = try channel.finish(acceptAlreadyClosed: true)
    }
}
