import Foundation
import NIOCore
import NIOWebSocket

/// Speaks WebSocket on one upgraded connection for a ``MockWebSocketEndpoint``: records what the client sends, answers
/// pings and closes, fails the connection on protocol errors, and either echoes messages or hands them to a
/// ``WebSocketScriptRunner``.
///
/// Backpressure: it holds back the channel's reads while the channel is not writable, so a client that stops reading
/// what the server sends stops being read too, and the server's memory does not grow with what it cannot send.
///
/// Lives on the connection's event loop, after NIO's frame decoder; it writes frames as bytes itself, so scripted raw
/// bytes and frames share one path to the socket.
final class WebSocketSession: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// How long the server waits for the client's close frame after sending its own.
    private let closeTimeout: TimeAmount

    private enum Phase {
        /// Messages flow both ways.
        case open
        /// The server sent a close frame and waits for the client's.
        case closeSent
        /// The client sent a close frame the server does not answer (``MockWebSocketStep/ignoreClose``).
        case closeIgnored
        /// The TCP connection is closing or closed.
        case finished
    }

    private let path: String
    private let registry: WebSocketRegistry
    private let steps: [MockWebSocketStep]?
    private var runner: WebSocketScriptRunner?
    private var context: ChannelHandlerContext?
    private var assembler = WebSocketMessageAssembler()
    private var phase = Phase.open
    private var closeTimer: Scheduled<Void>?
    private var isReadHeld = false
    private var isFlushScheduled = false
    /// Set by ``MockWebSocketStep/ignoreClose``.
    var ignoresClose = false
    /// Set by ``MockWebSocketStep/ignorePings``.
    var ignoresPings = false

    init(path: String, endpoint: MockWebSocketEndpoint, registry: WebSocketRegistry) {
        self.path = path
        self.registry = registry
        self.closeTimeout = TimeAmount(endpoint.closeTimeout)
        switch endpoint.behaviour {
        case .echo:
            steps = nil
        case .script(let steps):
            self.steps = steps
        }
    }

    /// Starts the script, if there is one; call once the handler is in place after the handshake.
    func start() {
        guard let steps, let context else { return }
        let runner = WebSocketScriptRunner(steps: steps, session: self, eventLoop: context.eventLoop)
        self.runner = runner
        runner.run()
    }

    // MARK: Channel events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        finish()
        self.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard phase != .finished else { return }
        let inbound: WebSocketInbound?
        do {
            inbound = try assembler.receive(unwrapInboundIn(data))
        } catch {
            fail(error, closeAtOnce: false)
            return
        }
        switch inbound {
        case nil:
            break
        case .message(let message, let record):
            registry.record(record, path: path)
            guard phase == .open else { return }
            if let runner {
                runner.messageArrived(message)
            } else {
                sendMessage(message)
                scheduleFlush()
            }
        case .ping(let payload):
            registry.record(.ping(Data(payload.readableBytesView)), path: path)
            guard phase == .open, !ignoresPings else { return }
            writeFrame(opcode: MockWebSocketFrame.Opcode.pong, payload: payload)
            scheduleFlush()
        case .pong(let payload):
            registry.record(.pong(Data(payload.readableBytesView)), path: path)
        case .close(let code, let reason):
            registry.record(.close(code: code, reason: reason), path: path)
            closeReceived(code: code, reason: reason)
        }
    }

    func read(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            context.read()
        } else {
            isReadHeld = true
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            if isReadHeld {
                isReadHeld = false
                context.read()
            }
            runner?.run()
        }
        context.fireChannelWritabilityChanged()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // The client closed its side of the TCP connection: nothing more can arrive, close frame or not.
        if case .inputClosed = event as? ChannelEvent {
            closeConnection()
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        switch error {
        case let error as NIOWebSocketError:
            // NIO's decoder stops decoding after an error, so the client's close frame could not be read: close the
            // connection as soon as the close frame is out.
            let code: UInt16 = error == .invalidFrameLength ? 1009 : 1002
            fail(WebSocketFailure(code: code, reason: "invalid frame"), closeAtOnce: true)
        case is ByteToMessageDecoderError:
            // Bytes after a decoding error; the connection is already failing.
            break
        default:
            closeConnection()
        }
    }

    // MARK: Sending, for the script

    /// Whether the connection can take more bytes now.
    var isWritable: Bool {
        context?.channel.isWritable ?? false
    }

    /// Whether frames may still be sent: the connection is open and the server has not sent a close frame.
    var canSend: Bool {
        phase == .open || phase == .closeIgnored
    }

    func sendMessage(_ message: WebSocketDataMessage) {
        writeFrame(opcode: message.opcode, payload: message.payload)
    }

    /// Sends `payload` as a message of fragments of `fragmentSize` bytes, with a ping after the first one if
    /// `pingBetween` is set and there is more than one fragment.
    func sendFragmented(opcode: UInt8, payload: ByteBuffer, fragmentSize: Int, pingBetween: Data?) {
        var rest = payload
        var isFirst = true
        repeat {
            let piece = rest.readSlice(length: min(max(1, fragmentSize), rest.readableBytes)) ?? ByteBuffer()
            let isLast = rest.readableBytes == 0
            writeFrame(opcode: isFirst ? opcode : MockWebSocketFrame.Opcode.continuation, fin: isLast, payload: piece)
            if isFirst, !isLast, let pingBetween {
                writeFrame(opcode: MockWebSocketFrame.Opcode.ping, payload: ByteBuffer(bytes: pingBetween))
            }
            isFirst = false
        } while rest.readableBytes > 0
    }

    func sendPing(_ payload: Data) {
        writeFrame(opcode: MockWebSocketFrame.Opcode.ping, payload: ByteBuffer(bytes: payload))
    }

    func sendRaw(_ bytes: [UInt8]) {
        context?.write(wrapOutboundOut(ByteBuffer(bytes: bytes)), promise: nil)
    }

    /// Sends a close frame, then waits up to ``MockWebSocketEndpoint/closeTimeout`` for the client's before closing the
    /// connection.
    func startClose(code: UInt16?, reason: String) {
        guard canSend, let context else { return }
        phase = .closeSent
        writeClose(code: code, reason: reason)
        context.flush()
        closeTimer = context.eventLoop.assumeIsolated().scheduleTask(in: closeTimeout) {
            self.closeTimer = nil
            self.closeConnection()
        }
    }

    /// Closes the TCP connection at once, without a close frame.
    func drop() {
        context?.flush()
        closeConnection()
    }

    func flush() {
        context?.flush()
    }

    // MARK: Private

    private func closeReceived(code: UInt16?, reason: String) {
        switch phase {
        case .open:
            guard !ignoresClose else {
                phase = .closeIgnored
                return
            }
            runner?.stop()
            // Echo the code (and reason); a close without a code is answered without one.
            writeClose(code: code, reason: reason)
            closeAfterFlush()
        case .closeSent:
            closeConnection()
        case .closeIgnored, .finished:
            break
        }
    }

    /// Fails the connection (RFC 6455 §7.1.7): a close frame with the failure's code, then the TCP close, when the
    /// client's close frame comes (or after ``MockWebSocketEndpoint/closeTimeout``), or at once if `closeAtOnce`.
    private func fail(_ failure: WebSocketFailure, closeAtOnce: Bool) {
        runner?.stop()
        guard canSend else {
            closeConnection()
            return
        }
        guard closeAtOnce else {
            startClose(code: failure.code, reason: failure.reason)
            return
        }
        writeClose(code: failure.code, reason: failure.reason)
        closeAfterFlush()
    }

    private func writeClose(code: UInt16?, reason: String) {
        let payload = code.map { MockWebSocketFrame.closePayload(code: $0, reason: reason) } ?? []
        writeFrame(opcode: MockWebSocketFrame.Opcode.close, payload: ByteBuffer(bytes: payload))
    }

    private func closeAfterFlush() {
        guard let context else { return }
        phase = .finished
        context.writeAndFlush(wrapOutboundOut(ByteBuffer())).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }

    private func closeConnection() {
        guard let context, phase != .finished else { return }
        phase = .finished
        context.close(promise: nil)
    }

    /// Writes one unmasked frame (not flushed). Small payloads are copied behind the header so each frame is one write.
    private func writeFrame(opcode: UInt8, fin: Bool = true, payload: ByteBuffer) {
        guard let context else { return }
        var payload = payload
        var frame = context.channel.allocator.buffer(capacity: 14 + min(payload.readableBytes, 1024))
        frame.writeWebSocketFrameHeader(
            opcode: opcode,
            fin: fin,
            rsv: 0,
            maskingKey: nil,
            length: payload.readableBytes
        )
        if payload.readableBytes <= 1024 {
            frame.writeBuffer(&payload)
            context.write(wrapOutboundOut(frame), promise: nil)
        } else {
            context.write(wrapOutboundOut(frame), promise: nil)
            context.write(wrapOutboundOut(payload), promise: nil)
        }
    }

    /// Flushes once the current batch of reads is handled (frames that come with the bytes left over from the
    /// handshake arrive outside a read, so `channelReadComplete` would not do).
    private func scheduleFlush() {
        guard !isFlushScheduled, let context else { return }
        isFlushScheduled = true
        context.eventLoop.assumeIsolated().execute {
            self.isFlushScheduled = false
            self.context?.flush()
        }
    }

    private func finish() {
        phase = .finished
        closeTimer?.cancel()
        closeTimer = nil
        runner?.stop()
        runner = nil
    }
}
