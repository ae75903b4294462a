import CourierHTTP
import NIOCore
import NIOWebSocket

/// The client end of a WebSocket connection, on its event loop: masks what it sends, checks what it receives with
/// ``WebSocketMessageAssembler``, answers pings, matches pongs to pings, runs the close handshake, and reads only
/// while its owner wants messages.
final class WebSocketClientHandler: ChannelDuplexHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundIn = Never
    typealias OutboundOut = WebSocketFrame

    private enum Phase {
        case open
        /// The client sent its close frame and waits for the server's.
        case closeSent(code: UInt16, reason: [UInt8], timer: Scheduled<Void>?)
        case closed
    }

    private var phase = Phase.open
    private var assembler: WebSocketMessageAssembler
    private let delegate: any WebSocketConnectionDelegate
    private var context: ChannelHandlerContext?
    private var reading = false
    /// The newest of the owner's reading decisions applied.
    private var readingGeneration = 0
    private var readPending = false
    /// Pings waiting for their pongs, in order; `pingPayloads` numbers them and matches the pongs.
    private var pings: [@Sendable (TransferError?) -> Void] = []
    private var pingPayloads = WebSocketPings()
    /// A pong is written and not yet flushed out.
    private var pongInFlight = false
    /// The payload of the latest ping that came while a pong was in flight: answered once it went out.
    private var pongOwed: ByteBuffer?
    /// The closure to report when the channel goes inactive (set once the handshake or a failure decided it).
    private var closure: WebSocketClosure?
    /// Whether the owner heard how the connection ended (it hears it once).
    private var reported = false

    /// How long the server has to answer the client's close frame.
    private let closeTimeout: TimeAmount

    init(maximumMessageSize: Int, closeTimeout: TimeAmount, delegate: any WebSocketConnectionDelegate) {
        self.closeTimeout = closeTimeout
        self.assembler = WebSocketMessageAssembler(maximumMessageSize: maximumMessageSize)
        self.delegate = delegate
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        guard !context.channel.isActive else { return }
        // Added to a connection that is already gone: the upgrade buffer passes on the bytes that came before its
        // end, then the end itself, right after this, and the end is reported from there — after the messages, and
        // as a close handshake if the server's close frame is among those bytes. Should nothing report it (a channel
        // that never went through an upgrade buffer), it is reported once the loop gets back here.
        context.eventLoop.assumeIsolated().execute { [self] in
            guard !reported else { return }
            phase = .closed
            finish(WebSocketClosure(code: nil, reason: [], error: connectionLost))
        }
    }

    /// The handlers could not be installed (the server closed the connection before the owner took it over): the
    /// owner hears it as a lost connection, like any connection that ends without a close handshake.
    func startFailed(_ error: any Error) {
        phase = .closed
        let lost = TransferError.networkConnectionLost(
            "the WebSocket connection closed before it could be taken over: \(error)")
        finish(WebSocketClosure(code: nil, reason: [], error: lost))
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    private var connectionLost: TransferError {
        .networkConnectionLost("the WebSocket connection closed without a close handshake")
    }

    /// Why a send or a ping cannot go out: the failure that is ending the connection (an abort's `cancelled`, a
    /// protocol violation) once it is known, as the owner reports it after the end; once a close handshake began
    /// or ended cleanly, ``WebSocketConnection/notConnected``, as the owner reports a send after a clean close;
    /// else a closed connection.
    private var notOpen: TransferError {
        if let closure { return closure.error ?? WebSocketConnection.notConnected }
        if case .closeSent = phase { return WebSocketConnection.notConnected }
        return .networkConnectionLost("the WebSocket connection is closed")
    }

    // MARK: - Commands

    func send(_ message: WebSocketMessage, completion: @escaping @Sendable (TransferError?) -> Void) {
        guard case .open = phase, let context else {
            completion(notOpen)
            return
        }
        let frame: WebSocketFrame
        switch message {
        case .text(let text):
            frame = makeFrame(.text, bytes: context.channel.allocator.buffer(string: text))
        case .binary(let bytes):
            frame = makeFrame(.binary, bytes: bytes)
        }
        let promise = context.eventLoop.makePromise(of: Void.self)
        promise.futureResult.whenComplete { result in
            switch result {
            case .success: completion(nil)
            case .failure(let error): completion(.networkConnectionLost("the WebSocket message was not sent: \(error)"))
            }
        }
        context.writeAndFlush(wrapOutboundOut(frame), promise: promise)
    }

    func sendPing(completion: @escaping @Sendable (TransferError?) -> Void) {
        guard case .open = phase, let context else {
            completion(notOpen)
            return
        }
        pings.append(completion)
        let payload = pingPayloads.sent()
        context.writeAndFlush(
            wrapOutboundOut(makeFrame(.ping, bytes: context.channel.allocator.buffer(bytes: payload))), promise: nil)
    }

    func close(code: UInt16, reason: [UInt8]) {
        guard case .open = phase, let context else { return }
        sendClose(code: code, reason: reason, context: context)
    }

    func abort(_ error: TransferError) {
        guard let context else { return }
        if closure == nil { closure = WebSocketClosure(code: nil, reason: [], error: error) }
        phase = .closed
        context.close(promise: nil)
    }

    /// The owner's decision `generation`: applied unless a newer one was (see ``WebSocketConnection/setReading(_:generation:)``).
    func setReading(_ reading: Bool, generation: Int) {
        guard generation > readingGeneration else { return }
        readingGeneration = generation
        // While closing, reading goes on whatever the owner asks: the server's close frame must be seen.
        if case .closeSent = phase { return }
        setReading(reading)
    }

    private func setReading(_ reading: Bool) {
        self.reading = reading
        if reading, readPending, let context {
            readPending = false
            context.read()
        }
    }

    // MARK: - Channel events

    func read(context: ChannelHandlerContext) {
        if reading {
            context.read()
        } else {
            readPending = true
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        var payload = frame.unmaskedData
        let event = assembler.receive(
            WebSocketMessageAssembler.Frame(
                fin: frame.fin, reservedBits: frame.reservedBits.rawValue >> 4,
                opcode: UInt8(webSocketOpcode: frame.opcode), isMasked: frame.maskKey != nil,
                payload: payload.readBytes(length: payload.readableBytes) ?? []))
        switch event {
        case .none:
            break
        case .text(let text):
            if case .open = phase { delegate.webSocketDidReceive(.text(text)) }
        case .binary(let bytes):
            if case .open = phase { delegate.webSocketDidReceive(.binary(ByteBuffer(bytes: bytes))) }
        case .ping(let bytes):
            if case .open = phase { answerPing(ByteBuffer(bytes: bytes), context: context) }
        case .pong(let bytes):
            // Only the pong that echoes a ping answers it (and the pings before it); an unsolicited one, none.
            let answered = min(pingPayloads.pongReceived(bytes), pings.count)
            let done = pings.prefix(answered)
            pings.removeFirst(answered)
            for completion in done { completion(nil) }
        case .close(let code, let reason):
            serverClosed(code: code, reason: Array(reason.utf8), context: context)
        case .violation(let code, let reason):
            let error: TransferError =
                code == WebSocketMessageAssembler.CloseCode.messageTooBig
                ? .urlError(.dataLengthExceedsMaximum, reason) : .badServerResponse(reason)
            fail(closeCode: code, error: error, context: context)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let violation = error as? WebSocketFrameHeaderViolation {
            fail(closeCode: violation.closeCode, error: .badServerResponse(violation.reason), context: context)
            return
        }
        if let frameError = error as? NIOWebSocketError {
            switch frameError {
            case .invalidFrameLength:
                fail(
                    closeCode: WebSocketMessageAssembler.CloseCode.messageTooBig,
                    error: .urlError(.dataLengthExceedsMaximum, "the server sent a frame larger than the maximum"),
                    context: context)
            case .fragmentedControlFrame, .multiByteControlFrameLength:
                fail(
                    closeCode: WebSocketMessageAssembler.CloseCode.protocolError,
                    error: .badServerResponse("the server sent a malformed control frame"), context: context)
            }
            return
        }
        if closure == nil {
            closure = WebSocketClosure(
                code: nil, reason: [], error: .networkConnectionLost("the WebSocket connection failed: \(error)"))
        }
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if case .closeSent(let code, let reason, let timer) = phase {
            timer?.cancel()
            // The server closed the connection after our close frame without sending its own: still a close.
            if closure == nil { closure = WebSocketClosure(code: code, reason: reason, error: nil) }
        }
        phase = .closed
        finish(closure ?? WebSocketClosure(code: nil, reason: [], error: connectionLost))
        context.fireChannelInactive()
    }

    // MARK: - Closing

    private func serverClosed(code: UInt16?, reason: [UInt8], context: ChannelHandlerContext) {
        switch phase {
        case .open:
            // Echo the server's code, as RFC 6455 §5.5.1 asks, then leave the TCP close to the server (or do it
            // after the timeout). A close frame without a code closes with 1005 (§7.1.5): the handshake still
            // happened, and the owner reports it as such.
            closure = WebSocketClosure(
                code: code ?? WebSocketMessageAssembler.CloseCode.noStatusReceived, reason: reason, error: nil)
            sendClose(code: code, reason: [], context: context)
        case .closeSent(let sentCode, let sentReason, let timer):
            timer?.cancel()
            closure = WebSocketClosure(code: sentCode, reason: sentReason, error: nil)
            phase = .closed
            context.close(promise: nil)
        case .closed:
            break
        }
    }

    private func sendClose(code: UInt16?, reason: [UInt8], context: ChannelHandlerContext) {
        // Only what may go on the wire: no code the app may name but an endpoint may not send, no reason longer than
        // a control frame holds (the close is still reported with the code and reason asked for).
        let payload = context.channel.allocator.buffer(bytes: WebSocketCloseFrame.payload(code: code, reason: reason))
        context.writeAndFlush(wrapOutboundOut(makeFrame(.connectionClose, bytes: payload)), promise: nil)
        let timer = context.eventLoop.assumeIsolated().scheduleTask(in: closeTimeout) {
            [weak self] in
            guard let self, let context = self.context else { return }
            if self.closure == nil {
                self.closure = WebSocketClosure(
                    code: code, reason: reason,
                    error: .timedOut("the server did not answer the WebSocket close handshake in time"))
            }
            context.close(promise: nil)
        }
        // When the server closed first, this answer ends the handshake and the server closes TCP (or the timer
        // does); else the server's close frame is awaited.
        phase = .closeSent(
            code: code ?? WebSocketMessageAssembler.CloseCode.noStatusReceived, reason: reason, timer: timer)
        // Reading goes on, whatever the owner asked: the server's close frame must be seen.
        setReading(true)
    }

    /// The server broke the protocol: close with `closeCode` and fail with `error`.
    private func fail(closeCode: UInt16, error: TransferError, context: ChannelHandlerContext) {
        guard closure == nil else { return }
        closure = WebSocketClosure(code: closeCode, reason: [], error: error)
        if case .open = phase {
            sendClose(code: closeCode, reason: [], context: context)
        }
        // No handshake after a violation: the connection ends now (RFC 6455 §7.1.7).
        phase = .closed
        context.close(promise: nil)
    }

    private func finish(_ result: WebSocketClosure) {
        // Reported once, whichever of the channel's end, a failed start or the fallback of `handlerAdded` comes first.
        guard !reported else { return }
        reported = true
        let pending = pings
        pings = []
        pingPayloads.removeAll()
        // After a clean close, a ping still waiting for its pong fails as a receive still waiting does.
        for ping in pending { ping(result.error ?? WebSocketConnection.notConnected) }
        let delegate = self.delegate
        delegate.webSocketDidClose(result)
    }

    /// Answers a ping. While a pong is still going out, only the latest ping waits for an answer (RFC 6455 §5.5.3
    /// allows it): a server that streams pings and reads nothing made a pong queue up for each, without limit
    /// (reading goes on: pings are not messages the app holds back).
    private func answerPing(_ payload: ByteBuffer, context: ChannelHandlerContext) {
        guard !pongInFlight else {
            pongOwed = payload
            return
        }
        pongInFlight = true
        let promise = context.eventLoop.makePromise(of: Void.self)
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        promise.futureResult.whenComplete { _ in
            let handler = bound.value
            handler.pongInFlight = false
            guard let owed = handler.pongOwed, case .open = handler.phase, let context = handler.context else { return }
            handler.pongOwed = nil
            handler.answerPing(owed, context: context)
        }
        context.writeAndFlush(wrapOutboundOut(makeFrame(.pong, bytes: payload)), promise: promise)
    }

    private func makeFrame(_ opcode: WebSocketOpcode, bytes: ByteBuffer) -> WebSocketFrame {
        WebSocketFrame(fin: true, opcode: opcode, maskKey: .random(), data: bytes)
    }
}
