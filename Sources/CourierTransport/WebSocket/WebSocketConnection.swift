import CourierHTTP
import NIOCore
import NIOWebSocket

/// A client WebSocket connection (RFC 6455) on a connection the server switched: frames in and out, the close
/// handshake, pings, and backpressure. Every method may be called from any thread; the work hops to the
/// connection's event loop.
public final class WebSocketConnection: Sendable {
    private let channel: any Channel
    /// A box, not `NIOLoopBound`: the task opens the connection from whichever thread completed its handshake (the
    /// event loop's, or a trust evaluation's or a delegate's after a proxy or TLS challenge).
    private let handler: NIOLoopBoundBox<WebSocketClientHandler>

    /// How long the client waits by default for the server's close frame (or its closing the connection) after
    /// sending one.
    public static let closeTimeout: TimeAmount = .seconds(5)

    /// What a send or a ping fails with once a close handshake began — the client's close frame went out, or the
    /// server's came in — or ended cleanly: no data frame may follow a close frame (RFC 6455 §5.5.1). The owner
    /// reports it as it reports a send after the close (Darwin's `ENOTCONN`), not as a lost connection.
    public static let notConnected = TransferError.networkConnectionLost(
        "the WebSocket connection is closing or closed")

    private init(
        channel: any Channel, maximumMessageSize: Int, closeTimeout: TimeAmount,
        delegate: any WebSocketConnectionDelegate
    ) {
        self.channel = channel
        self.handler = NIOLoopBoundBox.makeBoxSendingValue(
            WebSocketClientHandler(
                maximumMessageSize: maximumMessageSize, closeTimeout: closeTimeout, delegate: delegate),
            eventLoop: channel.eventLoop)
    }

    /// Starts speaking WebSocket on `upgraded`. Nothing is read until ``setReading(_:)`` asks for it.
    ///
    /// - Parameters:
    ///   - maximumMessageSize: The largest message accepted; a larger one closes the connection with 1009.
    ///   - closeTimeout: How long to wait for the server's answer to the client's close frame.
    public static func start(
        _ upgraded: UpgradedConnection, maximumMessageSize: Int, closeTimeout: TimeAmount = closeTimeout,
        delegate: any WebSocketConnectionDelegate
    ) -> WebSocketConnection {
        PipelineTypeWarmUp.ensureWebSocket()
        let channel = upgraded.channel
        let connection = WebSocketConnection(
            channel: channel, maximumMessageSize: maximumMessageSize, closeTimeout: closeTimeout, delegate: delegate)
        let bound = connection.handler
        // A frame can be no larger than the largest message (the assembler checks whole messages).
        let maximumFrameSize = min(Int(UInt32.max), max(maximumMessageSize, 1 << 14))
        upgraded.start(
            { pipeline in
                try pipeline.addHandler(WebSocketFrameEncoder())
                try pipeline.addHandler(
                    ByteToMessageHandler(CheckedWebSocketFrameDecoder(maxFrameSize: maximumFrameSize)))
                try pipeline.addHandler(bound.value)
            },
            failed: { error in bound.value.startFailed(error) })
        return connection
    }

    /// Sends `message`; `completion` runs (on the event loop) once it was written, or with the error that stopped it.
    public func send(_ message: WebSocketMessage, completion: @escaping @Sendable (TransferError?) -> Void) {
        let handler = self.handler
        channel.eventLoop.execute { handler.value.send(message, completion: completion) }
    }

    /// Sends a ping; `completion` runs when its pong arrives (pongs answer pings in order), or with the error that
    /// ended the connection first.
    public func sendPing(completion: @escaping @Sendable (TransferError?) -> Void) {
        let handler = self.handler
        channel.eventLoop.execute { handler.value.sendPing(completion: completion) }
    }

    /// Starts the close handshake with `code` and `reason`; the connection closes when the server answered, or
    /// after ``closeTimeout``.
    public func close(code: UInt16, reason: [UInt8]) {
        let handler = self.handler
        channel.eventLoop.execute { handler.value.close(code: code, reason: reason) }
    }

    /// Closes the connection at once, without a close handshake; the delegate hears `error`.
    public func abort(_ error: TransferError) {
        let handler = self.handler
        channel.eventLoop.execute { handler.value.abort(error) }
    }

    /// Reads from the socket, or stops reading (backpressure: the owner has enough messages waiting). Decisions
    /// made on different threads may arrive in either order: the one with the highest `generation` counts, and an
    /// older one arriving later is ignored.
    public func setReading(_ reading: Bool, generation: Int) {
        let handler = self.handler
        channel.eventLoop.execute { handler.value.setReading(reading, generation: generation) }
    }
}
