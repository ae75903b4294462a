import NIOCore
import NIOHTTP2

/// The connection-level side of an HTTP/2 connection, placed after `NIOHTTP2Handler`: counts the client's PINGs,
/// tracks the open streams, sends scripted GOAWAYs and closes the connection once it has gone away and its streams
/// have ended, and writes scripted raw bytes beneath the HTTP/2 framing layer.
///
/// Lives on the connection's event loop; all methods must be called there.
final class HTTP2ConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    /// How long a connection that has gone away stays open after its last stream ended, so the client reads the
    /// GOAWAY before the connection closes (closing with unread input would reset the connection instead).
    private static let closeDelay = TimeAmount.milliseconds(100)

    private let state: ServerState
    private var context: ChannelHandlerContext?
    private var openStreamIDs: Set<Int> = []
    /// Streams after whose end the connection goes away (``HTTP2Misbehaviour/goAwayAfterResponse``).
    private var goAwayAfterStreamIDs: Set<Int> = []
    /// The last stream id of the GOAWAY sent, if one was.
    private var goAwayLastStreamID: Int?
    private var isClosing = false

    init(state: ServerState) {
        self.state = state
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    // MARK: Streams

    /// Registers a stream the client opened; it counts as open until `channel` closes.
    func streamOpened(_ streamID: Int, channel: any Channel) {
        openStreamIDs.insert(streamID)
        channel.closeFuture.assumeIsolated().whenComplete { _ in
            self.streamClosed(streamID)
        }
    }

    private func streamClosed(_ streamID: Int) {
        openStreamIDs.remove(streamID)
        if goAwayAfterStreamIDs.remove(streamID) != nil {
            goAway(lastStreamID: streamID, errorCode: .noError)
        } else {
            closeIfDrained()
        }
    }

    // MARK: Misbehaviour

    /// Sends GOAWAY with `lastStreamID` and `errorCode` (NIOHTTP2 then drops the streams above `lastStreamID`),
    /// and closes the connection once the streams it still serves have ended. A second GOAWAY may only lower the
    /// last stream id: a higher one is ignored.
    func goAway(lastStreamID: Int, errorCode: HTTP2ErrorCode) {
        guard let context, !isClosing else { return }
        if let sent = goAwayLastStreamID, sent <= lastStreamID {
            closeIfDrained()
            return
        }
        goAwayLastStreamID = lastStreamID
        let frame = HTTP2Frame(
            streamID: .rootStream,
            payload: .goAway(lastStreamID: HTTP2StreamID(lastStreamID), errorCode: errorCode, opaqueData: nil)
        )
        context.writeAndFlush(wrapOutboundOut(frame), promise: nil)
        closeIfDrained()
    }

    /// Sends a graceful GOAWAY (last stream id `streamID`) once stream `streamID` has ended.
    func goAwayAfterStream(_ streamID: Int) {
        goAwayAfterStreamIDs.insert(streamID)
    }

    /// Writes `bytes` on the connection beneath `NIOHTTP2Handler`, so they reach the client exactly as given, and
    /// the server's HTTP/2 state machine never sees them.
    func writeBeneathFraming(_ bytes: [UInt8]) {
        guard let context,
            let framing = try? context.pipeline.syncOperations.context(handlerType: NIOHTTP2Handler.self)
        else { return }
        // Writing from NIOHTTP2Handler's context hands the bytes to the handler before it (TLS). NIOHTTP2Handler
        // writes whole frames at a time on this same event loop, so the bytes never land inside one of its frames.
        framing.writeAndFlush(NIOAny(context.channel.allocator.buffer(bytes: bytes)), promise: nil)
    }

    private func closeIfDrained() {
        guard goAwayLastStreamID != nil, openStreamIDs.isEmpty, !isClosing, let context else { return }
        isClosing = true
        context.eventLoop.assumeIsolated().scheduleTask(in: Self.closeDelay) {
            context.close(promise: nil)
        }
    }

    // MARK: Events

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .ping(_, ack: false) = unwrapInboundIn(data).payload {
            state.recordPing()
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // The client closed its side: nothing more can be asked on this connection.
        if case .inputClosed = event as? ChannelEvent {
            context.close(promise: nil)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // NIOHTTP2Handler reports protocol errors here after answering them itself (RST_STREAM for a stream error,
        // GOAWAY for a connection error, after which the client closes). Anything else (TLS, I/O) ends the connection.
        if !(error is any NIOHTTP2Error) {
            context.close(promise: nil)
        }
    }
}
