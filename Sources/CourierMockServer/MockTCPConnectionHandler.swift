import NIOCore
import NIOSSL

/// One connection of a ``MockTCPServer``: the plain-text STARTTLS phase (line by line), then the mode (echo, script
/// or silent) on raw or decrypted bytes.
final class MockTCPConnectionHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let mode: MockTCPServer.Mode
    private let state: MockTCPState
    /// The STARTTLS line while still in plain text; `nil` once in TLS, or without STARTTLS.
    private var startTLSCommand: [UInt8]?
    private let sslContext: NIOSSLContext?
    /// Plain-text bytes not yet a whole line (STARTTLS phase only).
    private var pendingLine: [UInt8] = []
    private var receivedCount = 0
    private var inputEnded = false
    /// A script's `receive` step waiting for this many bytes.
    private var awaitedCount: Int?
    private var remainingSteps: [MockTCPStep] = []
    private var context: ChannelHandlerContext?

    init(mode: MockTCPServer.Mode, state: MockTCPState, startTLSCommand: [UInt8]?, sslContext: NIOSSLContext?) {
        self.mode = mode
        self.state = state
        self.startTLSCommand = startTLSCommand
        self.sslContext = sslContext
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        if case .script(let steps) = mode {
            remainingSteps = steps
            runSteps()
        }
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        state.record(bytes)
        guard let command = startTLSCommand else {
            handle(Array(bytes.readableBytesView))
            return
        }
        pendingLine.append(contentsOf: bytes.readableBytesView)
        while startTLSCommand != nil, let end = lineEnd(in: pendingLine) {
            let line = Array(pendingLine[..<end])
            pendingLine.removeFirst(end)
            if line == command {
                upgrade(context: context)
            } else {
                handle(line)
            }
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed {
            inputEnded = true
            state.recordEndOfInput()
            switch mode {
            case .echo: context.close(mode: .output, promise: nil)
            case .script: resumeIfReceived()
            case .silent: break
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    /// The index just past the first `\r\n`, if any.
    private func lineEnd(in bytes: [UInt8]) -> Int? {
        guard bytes.count >= 2 else { return nil }
        for index in 1..<bytes.count where bytes[index - 1] == 13 && bytes[index] == 10 {
            return index + 1
        }
        return nil
    }

    /// Replies `READY\r\n` in plain text, then puts TLS in front: the client's handshake comes next.
    private func upgrade(context: ChannelHandlerContext) {
        startTLSCommand = nil
        context.writeAndFlush(
            wrapOutboundOut(ByteBuffer(string: MockTCPServer.startTLSReply)), promise: nil)
        guard let sslContext else { return }
        do {
            try context.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: sslContext), position: .first)
        } catch {
            context.close(promise: nil)
        }
        // A client waits for the reply before its handshake: nothing should follow the command in plain text.
        pendingLine = []
    }

    /// The mode's handling of received bytes.
    private func handle(_ bytes: [UInt8]) {
        receivedCount += bytes.count
        switch mode {
        case .echo:
            context?.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: bytes)), promise: nil)
        case .script:
            resumeIfReceived()
        case .silent:
            break
        }
    }

    private func resumeIfReceived() {
        guard let awaited = awaitedCount, receivedCount >= awaited || inputEnded else { return }
        awaitedCount = nil
        runSteps()
    }

    private func runSteps() {
        guard let context else { return }
        while !remainingSteps.isEmpty {
            let step = remainingSteps.removeFirst()
            switch step {
            case .send(let bytes):
                context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: bytes)), promise: nil)
            case .wait(let duration):
                let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
                context.eventLoop.scheduleTask(in: duration) { bound.value.runSteps() }
                return
            case .waitForSignal(let signal):
                let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
                let eventLoop = context.eventLoop
                signal.whenFired { eventLoop.execute { bound.value.runSteps() } }
                return
            case .receive(let count):
                awaitedCount = count
                if receivedCount >= count || inputEnded {
                    awaitedCount = nil
                    continue
                }
                return
            case .stopReading:
                try? context.channel.syncOptions?.setOption(.autoRead, value: false)
            case .closeWrite:
                context.close(mode: .output, promise: nil)
            case .close:
                context.close(promise: nil)
                return
            }
        }
    }
}
