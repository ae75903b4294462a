import CourierHTTP
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS

/// The event-loop side of a ``StreamConnection``: it runs a ``StreamStateMachine`` and does what it says: connects,
/// reads on demand, writes, shuts the write side down, starts TLS, keeps each call's promise and timer.
///
/// It exists before its channel (calls made before the connection opens wait in the machine) and joins the
/// pipeline once the connect succeeded (not in the bootstrap's initializer: happy eyeballs may try several
/// channels, and one handler can only ever sit in one pipeline). Everything it holds is touched on its event loop
/// only.
final class StreamChannelHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// A call waiting for its outcome.
    private enum Pending {
        case read(EventLoopPromise<StreamReadResult>)
        case done(EventLoopPromise<Void>)
    }

    let eventLoop: any EventLoop
    let endpoint: Endpoint
    private var machine = StreamStateMachine()
    private var pending: [StreamStateMachine.ID: (call: Pending, timer: Scheduled<Void>?)] = [:]
    private var nextID = 0
    private var context: ChannelHandlerContext?
    /// The handler's place in the pipeline, once it joined one.
    var channelContext: ChannelHandlerContext? { context }
    private var onEvent: (@Sendable (StreamConnectionEvent) -> Void)?
    /// Actions not performed yet: a step taken while performing another step's actions (a promise's callback may
    /// make a call) queues behind them instead of running in the middle.
    private var queuedActions: [StreamStateMachine.Action] = []
    private var performing = false
    var connectTimeout: TimeAmount = .seconds(60)
    /// The TLS setups of `startTLS` barriers, until they run.
    var tlsSetups: [StreamStateMachine.ID: StreamTLSSetup] = [:]
    /// The running TLS handshake: its barrier, timer, the evaluator's reason for rejecting the server, and whether
    /// NIOSSL verifies it (no evaluator), so that the leaf must still be checked for the host (``PeerCertificateHost``).
    var handshake: (id: StreamStateMachine.ID, timer: Scheduled<Void>?, rejection: RejectionBox, checksLeafHost: Bool)?

    init(endpoint: Endpoint, eventLoop: any EventLoop, onEvent: @escaping @Sendable (StreamConnectionEvent) -> Void) {
        self.endpoint = endpoint
        self.eventLoop = eventLoop
        self.onEvent = onEvent
    }

    // MARK: - Calls (on the loop)

    /// Takes a call: its promise and timer are kept under the ID the machine knows it by.
    func submit(
        _ make: (StreamStateMachine.ID) -> StreamStateMachine.Operation,
        read promise: EventLoopPromise<StreamReadResult>, deadline: NIODeadline?
    ) {
        let id = allocateID()
        keep(.read(promise), id: id, deadline: deadline)
        step { $0.submit(make(id)) }
    }

    /// Takes a call that completes without a value.
    func submit(
        _ make: (StreamStateMachine.ID) -> StreamStateMachine.Operation, done promise: EventLoopPromise<Void>,
        deadline: NIODeadline?, tls: StreamTLSSetup? = nil
    ) {
        let id = allocateID()
        keep(.done(promise), id: id, deadline: deadline)
        if let tls { tlsSetups[id] = tls }
        step { $0.submit(make(id)) }
    }

    func connect(timeout: TimeAmount) {
        connectTimeout = timeout
        step { $0.connectRequested() }
    }

    func adopting() {
        step { $0.adopting() }
    }

    func fail(_ error: TransferError) {
        step { $0.fail(error) }
    }

    private func allocateID() -> StreamStateMachine.ID {
        nextID += 1
        return nextID
    }

    private func keep(_ call: Pending, id: StreamStateMachine.ID, deadline: NIODeadline?) {
        let bound = NIOLoopBound(self, eventLoop: eventLoop)
        let eventLoop = self.eventLoop
        let timer = deadline.map { deadline in
            eventLoop.scheduleTask(deadline: deadline) {
                if LateTimerGrace.firedLate(deadline, now: eventLoop.now) {
                    eventLoop.scheduleTask(in: LateTimerGrace.extraTurn) { bound.value.step { $0.timedOut(id: id) } }
                } else {
                    bound.value.step { $0.timedOut(id: id) }
                }
            }
        }
        pending[id] = (call, timer)
    }

    // MARK: - Channel events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive {
            step { $0.connected() }
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        step { $0.connected() }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        step { $0.channelClosed() }
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        step { $0.received(bytes) }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        step { $0.channelReadFinished() }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed {
            step { $0.inputClosed() }
        } else if let event = event as? TLSUserEvent, case .handshakeCompleted = event, let running = handshake {
            running.timer?.cancel()
            handshake = nil
            // NIOSSL also takes an address entry equal to the peer's for the host (see `PeerCertificateHost`): the
            // leaf must name the host before the calls waiting for the handshake send anything.
            if running.checksLeafHost, !PeerCertificateHost.handshakeLeaf(in: context.pipeline, names: endpoint.host) {
                step {
                    $0.fail(
                        .serverCertificateUntrusted("the certificate of \(endpoint) does not name \(endpoint.host)"))
                }
            } else {
                step { $0.barrierFinished(id: running.id) }
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Many servers close without TLS's close_notify: the end of input all the same.
        if let ssl = error as? NIOSSLError, case .uncleanShutdown = ssl, handshake == nil {
            step { $0.inputClosed() }
            return
        }
        let mapped: TransferError
        if let running = handshake {
            mapped =
                running.rejection.withLockedValue { $0 }
                ?? TransportErrorMapping.connectError(error, endpoint: endpoint)
        } else {
            mapped = TransportErrorMapping.exchangeError(error, endpoint: endpoint)
        }
        step { $0.fail(mapped) }
    }

    // MARK: - Acting

    /// Steps the machine and performs its actions, in order, after any still queued.
    func step(_ event: (inout StreamStateMachine) -> [StreamStateMachine.Action]) {
        queuedActions.append(contentsOf: event(&machine))
        guard !performing else { return }
        performing = true
        defer { performing = false }
        while !queuedActions.isEmpty {
            let action = queuedActions.removeFirst()
            perform(action)
        }
    }

    private func perform(_ action: StreamStateMachine.Action) {
        switch action {
        case .connect:
            startConnecting()
        case .completeRead(let id, let bytes, let atEOF):
            if case .read(let promise) = take(id) {
                promise.succeed(StreamReadResult(bytes: bytes, atEOF: atEOF))
            }
        case .succeed(let id):
            if case .done(let promise) = take(id) { promise.succeed(()) }
        case .fail(let id, let failure):
            let error: any Error
            switch failure {
            case .transfer(let transfer): error = transfer
            case .readSideClosed: error = StreamConnectionError.readSideClosed
            case .writeSideClosed: error = StreamConnectionError.writeSideClosed
            }
            switch take(id) {
            case .read(let promise): promise.fail(error)
            case .done(let promise): promise.fail(error)
            case nil: break
            }
        case .write(let id, let bytes):
            write(bytes, id: id)
        case .readFromChannel:
            context?.read()
        case .shutdownOutput(let id):
            shutdownOutput(id: id)
        case .runBarrier(let id, .drain):
            step { $0.barrierFinished(id: id) }
        case .runBarrier(let id, .startTLS):
            startTLS(barrier: id)
        case .report(let event):
            onEvent?(event)
            if event == .finished || event.isFailure { onEvent = nil }
        case .close:
            handshake?.timer?.cancel()
            handshake = nil
            context?.close(promise: nil)
        }
    }

    private func take(_ id: StreamStateMachine.ID) -> Pending? {
        guard let entry = pending.removeValue(forKey: id) else { return nil }
        entry.timer?.cancel()
        tlsSetups[id] = nil
        return entry.call
    }

    private func startConnecting() {
        let bound = NIOLoopBound(self, eventLoop: eventLoop)
        let endpoint = endpoint
        let bootstrap = ClientBootstrap(group: eventLoop)
            .connectTimeout(connectTimeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            // Read on demand only: bytes the app does not ask for stay in the kernel's buffer, and the peer's.
            .channelOption(.autoRead, value: false)
            // The peer's end of input closes only the read side: the app may still write (and `readClosedFor`).
            .channelOption(.allowRemoteHalfClosure, value: true)
        HostConnector.connect(bootstrap, host: endpoint.host, port: endpoint.port)
            .whenComplete { result in
                let handler = bound.value
                switch result {
                case .success(let channel):
                    if handler.machine.isClosed {
                        channel.close(promise: nil)  // cancelled while connecting
                        return
                    }
                    do {
                        try channel.pipeline.syncOperations.addHandler(handler)
                    } catch {
                        channel.close(promise: nil)
                        handler.fail(TransportErrorMapping.connectError(error, endpoint: endpoint))
                    }
                case .failure(let error):
                    handler.fail(TransportErrorMapping.connectError(error, endpoint: endpoint))
                }
            }
    }

    private func write(_ bytes: ByteBuffer, id: StreamStateMachine.ID) {
        guard let context else { return }
        let promise = eventLoop.makePromise(of: Void.self)
        let bound = NIOLoopBound(self, eventLoop: eventLoop)
        let endpoint = endpoint
        promise.futureResult.whenComplete { result in
            let error: TransferError?
            switch result {
            case .success: error = nil
            case .failure(let failure): error = TransportErrorMapping.exchangeError(failure, endpoint: endpoint)
            }
            bound.value.step { $0.writeFinished(id: id, error: error) }
        }
        context.writeAndFlush(wrapOutboundOut(bytes), promise: promise)
    }

    private func shutdownOutput(id: StreamStateMachine.ID) {
        guard let context else { return }
        let promise = eventLoop.makePromise(of: Void.self)
        let bound = NIOLoopBound(self, eventLoop: eventLoop)
        // A failed shutdown (the socket is already gone) still ends the write side; the channel's own close follows.
        promise.futureResult.whenComplete { _ in bound.value.step { $0.outputShutDown(id: id) } }
        context.close(mode: .output, promise: promise)
    }
}

extension StreamConnectionEvent {
    var isFailure: Bool {
        if case .failed = self { return true }
        return false
    }
}
