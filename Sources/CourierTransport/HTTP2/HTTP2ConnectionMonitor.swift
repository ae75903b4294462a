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
/// - A close takes a while to complete (TLS sends its `close_notify` and awaits the peer's), and the channel is
///   still active meanwhile: the monitor says so at once (``isClosing``), so that no stream is opened on a connection
///   that is going away, and takes the connection out of the pool (``onUnusable``) whenever it closes it.
/// - A connection error (a protocol violation NIOHTTP2 detected, which it already answered with `GOAWAY`) closes
///   it; its streams fail as their channels go inactive. A stream error (NIOHTTP2 reset that stream, or could not send
///   one of its frames) leaves the connection and its other streams alone. NIOHTTP2 reports both kinds the same way;
///   the monitor tells them apart by the `GOAWAY` NIOHTTP2 writes first for a connection error, which it learns of as
///   NIOHTTP2's frame delegate (see ``wroteFrame(_:)``).
/// - A reset NIOHTTP2 sent itself, for the server's protocol error on a stream (a malformed response), is told from a
///   reset the server sent (``streamResetForServerError``): the stream's channel hears of both alike.
///
/// Timers run on the channel's event loop, so tests drive them with an embedded loop's virtual clock.
final class HTTP2ConnectionMonitor: ChannelDuplexHandler, NIOHTTP2FrameDelegate {
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
    /// The server sent `GOAWAY`: streams above `lastStreamID` were not processed. Called for the first one only.
    var onGoAway: ((_ lastStreamID: Int) -> Void)?
    /// The connection is about to be closed (for a protocol error, idle, an unanswered ping, or after a `GOAWAY`): no
    /// new stream should be put on it.
    var onUnusable: (() -> Void)?
    /// The connection closed.
    var onClosed: (() -> Void)?

    private let timing: Timing
    private var context: ChannelHandlerContext?
    private var maximumConcurrentStreams: Int?
    private var openStreams = 0
    /// The lowest last stream id of the server's `GOAWAY`s, once one came: streams above it were not processed (RFC
    /// 9113 §6.8; a later `GOAWAY` may only lower it, as in a graceful shutdown that announces 2³¹−1 first). Kept,
    /// not only reported: a `GOAWAY` may come right behind the server's first SETTINGS, in the same read, before the
    /// pool has bound ``onGoAway``.
    private(set) var goAwayLastStreamID: Int?
    private var isClosed = false
    private var idleTimer: Scheduled<Void>?
    private var pingTimer: Scheduled<Void>?
    private var pingDeadline: Scheduled<Void>?
    /// The payload of the ping awaiting its answer.
    private var outstandingPing: HTTP2PingData?
    private var nextPingValue: UInt64 = 1
    /// NIOHTTP2 wrote `GOAWAY`: it met a connection error (Courier sends none of its own).
    private var wroteGoAway = false
    /// The stream of the last RST_STREAM the server sent: NIOHTTP2 reports the stream's close right after the frame.
    private var streamResetByServer: HTTP2StreamID?
    /// The stream NIOHTTP2 reset itself because the server broke the protocol on it (RFC 9113 §8.1.1: a malformed
    /// response, such as a `content-length` its DATA frames contradict, a connection-specific or uppercase field, no
    /// `:status`; or §5.4.2: a flow-control violation). Set only while that stream's close passes on to the
    /// multiplexer, which closes the stream's channel with the same `StreamClosed` error a reset by the server gives:
    /// the stream's handler asks here, as it fails, whose fault the reset was.
    private(set) var streamResetForServerError: HTTP2StreamID?
    /// The server's protocol violation that NIOHTTP2 answered with `GOAWAY` and the monitor closed the connection for
    /// (RFC 9113 §5.4.1): a malformed frame or header block, a header list over the announced limit, or abuse its
    /// denial-of-service guards caught (CONTINUATION, PING or SETTINGS floods, empty DATA frames, too many
    /// glitches). The connection's streams then close without an error of their own; they ask here why.
    private(set) var protocolViolation: (any Error)?
    /// The connection began to close: the monitor closed it, or a close passed it on its way to the socket. Its
    /// channel may stay active a while longer (TLS's `close_notify`), and a stream opened meanwhile would get no
    /// answer (NIOHTTP2 refuses its HEADERS after its own `GOAWAY` when no stream is left, and reads no further)
    /// and would fail only as the connection closes, with the connection's error: a request leased before the pool
    /// heard of the close must go to another connection instead.
    private(set) var isClosing = false

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
        case .rstStream:
            streamResetByServer = frame.streamID
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
            let resetByServer = closed.streamID == streamResetByServer
            if resetByServer { streamResetByServer = nil }
            if let reason = closed.reason, reason != .cancel, !resetByServer {
                // No RST_STREAM came from the server for it: the reset is NIOHTTP2's, for the server's error.
                streamResetForServerError = closed.streamID
            }
            openStreams = max(0, openStreams - 1)
            if openStreams == 0 { becameIdle(context: context) }
        default:
            break
        }
        context.fireUserInboundEventTriggered(event)
        // The stream's exchange failed as its close passed on (its channel fires the error synchronously).
        streamResetForServerError = nil
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        ready.fail(error)
        if error is NIOHTTP2Errors.StreamError {
            // NIOHTTP2 could not send a frame of one stream, and resets nothing for that: the multiplexer behind hands
            // the error to the stream's channel, whose exchange fails.
            context.fireErrorCaught(error)
            return
        }
        // NIOHTTP2 reports a connection error right after writing GOAWAY, and a stream error as it resets the stream
        // (RST_STREAM, held back while the connection cannot write: the stream's channel closes when it goes out). An
        // HTTP/2 error with no GOAWAY before it is thus one stream's, however late its reset; one before the first
        // SETTINGS, or one from beneath HTTP/2 (TLS, the socket), is the connection's.
        guard maximumConcurrentStreams == nil || wroteGoAway || !(error is any NIOHTTP2Error) else { return }
        if wroteGoAway, protocolViolation == nil { protocolViolation = error }
        closeConnection(context: context)
    }

    /// Every close the monitor decides goes through here.
    private func closeConnection(context: ChannelHandlerContext) {
        isClosing = true
        // Out of the pool first, so that no request is put on a connection that is going away.
        onUnusable?()
        onUnusable = nil
        context.close(promise: nil)
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

    // MARK: - Outbound

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        // A close from behind (the pool's): the pool no longer leases the connection, but an exchange it leased just
        // before may still reach `HTTP2Connection` to open its stream.
        if mode == .all { isClosing = true }
        context.close(mode: mode, promise: promise)
    }

    // MARK: - NIOHTTP2FrameDelegate

    /// NIOHTTP2 wrote `frame` (called on the event loop, before NIOHTTP2 reports the error a `GOAWAY` answers).
    func wroteFrame(_ frame: HTTP2Frame) {
        if case .goAway = frame.payload { wroteGoAway = true }
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
        let first = goAwayLastStreamID == nil
        goAwayLastStreamID = min(goAwayLastStreamID ?? lastStreamID, lastStreamID)
        if maximumConcurrentStreams == nil {
            ready.fail(ChannelError.eof)
        }
        if first { onGoAway?(lastStreamID) }
        if openStreams == 0 { closeConnection(context: context) }
    }

    private func becameIdle(context: ChannelHandlerContext) {
        guard !isClosed, openStreams == 0, maximumConcurrentStreams != nil else { return }
        if goAwayLastStreamID != nil {
            closeConnection(context: context)
            return
        }
        cancelIdleTimers()
        let loop = context.eventLoop.assumeIsolated()
        idleTimer = loop.scheduleTask(in: timing.idleTimeout) { [weak self] in
            guard let self, let context = self.context else { return }
            self.closeConnection(context: context)
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
            guard let self, let context = self.context else { return }
            self.closeConnection(context: context)
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
