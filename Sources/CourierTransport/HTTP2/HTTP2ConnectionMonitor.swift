import NIOCore
import NIOHTTP2

/// Watches an HTTP/2 connection from just behind NIOHTTP2's handler: the peer's SETTINGS (how many streams it
/// allows), `GOAWAY`, the streams opening and closing, and the connection's liveness while idle.
///
/// - The connection is ready once the server's first SETTINGS frame arrived (``ready``): only then is its stream
///   limit known.
/// - Idle (no open stream), it is closed after `idleTimeout`; before that, every `pingInterval` a PING checks that
///   the peer is still there, and an unanswered one (after `pingTimeout`) closes it, so that the next request does
///   not meet a connection a middle box silently dropped.
/// - After a `GOAWAY` it closes as soon as its last stream ends.
/// - A connection error (a protocol violation NIOHTTP2 detected, which it already answered with `GOAWAY`) closes
///   it; its streams fail as their channels go inactive. A stream error (NIOHTTP2 reset that stream) leaves the
///   connection and its other streams alone.
///
/// Timers run on the channel's event loop, so tests drive them with an embedded loop's virtual clock.
final class HTTP2ConnectionMonitor: ChannelDuplexHandler {
    typealias InboundIn = HTTP2Frame
    typealias InboundOut = HTTP2Frame
    typealias OutboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    /// How the monitor keeps an idle connection.
    struct Timing {
        /// An idle connection is closed after this long.
        var idleTimeout: TimeAmount
        /// An idle connection is pinged this often.
        var pingInterval: TimeAmount = .seconds(30)
        /// A ping not answered within this closes the connection.
        var pingTimeout: TimeAmount = .seconds(10)
    }

    /// The stream limit assumed when the server's SETTINGS names none (RFC 9113 leaves it unlimited; 100 is what
    /// it recommends as a minimum and what common servers announce).
    static let defaultMaximumConcurrentStreams = 100

    /// Completed with the server's stream limit when its first SETTINGS arrives; failed if the connection closes
    /// first.
    let ready: EventLoopPromise<Int>
    /// The server changed its stream limit after the first SETTINGS.
    var onCapacityChanged: ((Int) -> Void)?
    /// The server sent `GOAWAY`: streams above `lastStreamID` were not processed.
    var onGoAway: ((_ lastStreamID: Int) -> Void)?
    /// The connection is about to be closed for a protocol error: no new stream should be put on it.
    var onUnusable: (() -> Void)?
    /// The connection closed.
    var onClosed: (() -> Void)?

    private let timing: Timing
    private var context: ChannelHandlerContext?
    private var maximumConcurrentStreams: Int?
    private var openStreams = 0
    private var goAwayReceived = false
    private var isClosed = false
    private var idleTimer: Scheduled<Void>?
    private var pingTimer: Scheduled<Void>?
    private var pingDeadline: Scheduled<Void>?
    /// The payload of the ping awaiting its answer.
    private var outstandingPing: HTTP2PingData?
    private var nextPingValue: UInt64 = 1
    /// An error was reported and it is not yet known whether it was the connection's or one stream's.
    private var errorPendingClassification = false
    /// A stream was reset for an error during this event-loop turn.
    private var streamResetThisTurn = false

    init(ready: EventLoopPromise<Int>, timing: Timing) {
        self.ready = ready
        self.timing = timing
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        cancelIdleTimers()
        self.context = nil
    }

    // MARK: - Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.payload {
        case .settings(.settings(let settings)):
            settingsReceived(settings)
        case .goAway(let lastStreamID, _, _):
            goAway(lastStreamID: Int(lastStreamID), context: context)
        case .ping(let data, ack: true) where data == outstandingPing:
            outstandingPing = nil
            pingDeadline?.cancel()
            pingDeadline = nil
            if openStreams == 0 { schedulePing() }
        default:
            break
        }
        context.fireChannelRead(data)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case is NIOHTTP2StreamCreatedEvent:
            openStreams += 1
            if openStreams == 1 { cancelIdleTimers() }
        case let closed as StreamClosedEvent:
            if let reason = closed.reason, reason != .cancel {
                // NIOHTTP2 resets a stream for a stream error and reports the error just before or just after.
                errorPendingClassification = false
                noteStreamReset(context: context)
            }
            openStreams = max(0, openStreams - 1)
            if openStreams == 0 { becameIdle(context: context) }
        default:
            break
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        ready.fail(error)
        guard maximumConcurrentStreams != nil, !errorPendingClassification else {
            closeForError(context: context)
            return
        }
        // NIOHTTP2 reports both kinds of protocol error here, without telling them apart: a connection error after
        // sending GOAWAY, a stream error around resetting the stream. The reset's StreamClosedEvent (with its code)
        // comes in the same loop turn, before or after; when there is none by the next turn, it was the connection's.
        if streamResetThisTurn { return }
        errorPendingClassification = true
        context.eventLoop.assumeIsolated().execute { [weak self] in
            guard let self, self.errorPendingClassification, let context = self.context else { return }
            self.errorPendingClassification = false
            self.closeForError(context: context)
        }
    }

    private func closeForError(context: ChannelHandlerContext) {
        // Out of the pool first, so that no request is put on a connection that is going away.
        onUnusable?()
        onUnusable = nil
        context.close(promise: nil)
    }

    private func noteStreamReset(context: ChannelHandlerContext) {
        guard !streamResetThisTurn else { return }
        streamResetThisTurn = true
        context.eventLoop.assumeIsolated().execute { [weak self] in
            self?.streamResetThisTurn = false
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        isClosed = true
        cancelIdleTimers()
        ready.fail(ChannelError.eof)
        let closed = onClosed
        onClosed = nil
        onCapacityChanged = nil
        onGoAway = nil
        onUnusable = nil
        closed?()
        context.fireChannelInactive()
    }

    // MARK: - Events

    private func settingsReceived(_ settings: HTTP2Settings) {
        guard let limit = settings.last(where: { $0.parameter == .maxConcurrentStreams })?.value else {
            if maximumConcurrentStreams == nil {
                maximumConcurrentStreams = Self.defaultMaximumConcurrentStreams
                ready.succeed(Self.defaultMaximumConcurrentStreams)
                if let context { becameIdle(context: context) }
            }
            return
        }
        let first = maximumConcurrentStreams == nil
        maximumConcurrentStreams = limit
        if first {
            ready.succeed(limit)
            if let context { becameIdle(context: context) }
        } else {
            onCapacityChanged?(limit)
        }
    }

    private func goAway(lastStreamID: Int, context: ChannelHandlerContext) {
        let first = !goAwayReceived
        goAwayReceived = true
        if maximumConcurrentStreams == nil {
            ready.fail(ChannelError.eof)
        }
        if first { onGoAway?(lastStreamID) }
        if openStreams == 0 { context.close(promise: nil) }
    }

    private func becameIdle(context: ChannelHandlerContext) {
        guard !isClosed, openStreams == 0, maximumConcurrentStreams != nil else { return }
        if goAwayReceived {
            context.close(promise: nil)
            return
        }
        cancelIdleTimers()
        let loop = context.eventLoop.assumeIsolated()
        idleTimer = loop.scheduleTask(in: timing.idleTimeout) { [weak self] in
            self?.context?.close(promise: nil)
        }
        schedulePing()
    }

    private func schedulePing() {
        guard let context, timing.pingInterval < timing.idleTimeout else { return }
        pingTimer?.cancel()
        pingTimer = context.eventLoop.assumeIsolated().scheduleTask(in: timing.pingInterval) { [weak self] in
            self?.sendPing()
        }
    }

    private func sendPing() {
        pingTimer = nil
        guard let context, openStreams == 0, outstandingPing == nil else { return }
        let data = HTTP2PingData(withInteger: nextPingValue)
        nextPingValue &+= 1
        outstandingPing = data
        let ping = HTTP2Frame(streamID: .rootStream, payload: .ping(data, ack: false))
        context.writeAndFlush(wrapOutboundOut(ping), promise: nil)
        pingDeadline = context.eventLoop.assumeIsolated().scheduleTask(in: timing.pingTimeout) { [weak self] in
            // No answer: the peer or the path is gone.
            self?.context?.close(promise: nil)
        }
    }

    private func cancelIdleTimers() {
        idleTimer?.cancel()
        idleTimer = nil
        pingTimer?.cancel()
        pingTimer = nil
        pingDeadline?.cancel()
        pingDeadline = nil
        outstandingPing = nil
    }
}
