import CourierHTTP
import NIOCore
import NIOHTTP1
import NIOHTTP2

/// A pooled HTTP/2 connection: each exchange runs on a stream of its own, as many at once as the server allows.
///
/// A stream's pipeline is NIOHTTP2's frame-to-HTTP/1-parts codec and an ``HTTP1ClientHandler`` in stream mode, so
/// timers, backpressure, decoding and the timeline work as on HTTP/1.1. Backpressure is per stream: a paused
/// exchange stops reading its stream channel, NIOHTTP2 then stops opening that stream's flow-control window, and
/// only that stream stalls. Cancelling an exchange resets its stream; the others go on.
///
/// After a `GOAWAY` the connection takes no new streams (the pool retires it); streams the server did not process
/// (above the `GOAWAY`'s last stream id, or refused with `REFUSED_STREAM`) are retried on another connection.
final class HTTP2Connection: PooledConnection, Sendable {
    let id: Int
    let key: PoolKey
    let channel: any Channel
    /// How many streams the server allowed in its first SETTINGS.
    let capacity: Int
    private let streams: NIOLoopBound<Streams>

    /// The connection's state on its event loop.
    private final class Streams {
        let multiplexer: HTTP2StreamMultiplexer
        let monitor: HTTP2ConnectionMonitor
        let establishment: ConnectionEstablishment
        let idleConnectionTimeout: TimeAmount
        /// The handler of each running exchange, for cancel, pause and drain.
        var handlers: [ObjectIdentifier: HTTP1ClientHandler] = [:]
        var isClosed = false
        /// Where a stream's slot goes back when its exchange ended (set by `bind(to:)`).
        weak var pool: ConnectionPool?

        init(
            multiplexer: HTTP2StreamMultiplexer, monitor: HTTP2ConnectionMonitor,
            establishment: ConnectionEstablishment, idleConnectionTimeout: TimeAmount
        ) {
            self.multiplexer = multiplexer
            self.monitor = monitor
            self.establishment = establishment
            self.idleConnectionTimeout = idleConnectionTimeout
        }
    }

    init(
        id: Int, key: PoolKey, channel: any Channel, capacity: Int, multiplexer: HTTP2StreamMultiplexer,
        monitor: HTTP2ConnectionMonitor, establishment: ConnectionEstablishment, idleConnectionTimeout: TimeAmount
    ) {
        self.id = id
        self.key = key
        self.channel = channel
        self.capacity = capacity
        self.streams = NIOLoopBound(
            Streams(
                multiplexer: multiplexer, monitor: monitor, establishment: establishment,
                idleConnectionTimeout: idleConnectionTimeout),
            eventLoop: channel.eventLoop)
    }

    /// HTTP/2.
    var applicationProtocol: ApplicationProtocol { "h2" }

    /// Open, not closing, and no `GOAWAY` came (one may have come with the server's first SETTINGS, before the pool
    /// got this connection). On the channel's event loop.
    var acceptsExchanges: Bool {
        let monitor = streams.value.monitor
        return channel.isActive && !monitor.isClosing && monitor.goAwayLastStreamID == nil
    }

    func bind(to pool: ConnectionPool) {
        let streams = self.streams.value
        streams.pool = pool
        streams.monitor.onCapacityChanged = { [weak pool] capacity in pool?.capacityChanged(self, to: capacity) }
        streams.monitor.onGoAway = { [weak pool] _ in pool?.retire(self) }
        streams.monitor.onUnusable = { [weak pool] in pool?.retire(self) }
        streams.monitor.onClosed = { [weak pool, weak streams] in
            streams?.isClosed = true
            pool?.connectionClosed(self)
        }
    }

    // MARK: - ExchangeExecutor

    /// Opens a stream for `exchange` and runs it there.
    func execute(_ exchange: TransportExchange, isReused: Bool) {
        let streams = self.streams
        channel.eventLoop.execute {
            self.open(exchange, isReused: isReused, streams: streams.value)
        }
    }

    func cancel(_ exchange: TransportExchange, error: TransferError) {
        let streams = self.streams
        channel.eventLoop.execute {
            streams.value.handlers[ObjectIdentifier(exchange)]?.cancel(exchange, error: error)
        }
    }

    func drain(_ exchange: TransportExchange, limit: Int) {
        let streams = self.streams
        channel.eventLoop.execute {
            streams.value.handlers[ObjectIdentifier(exchange)]?.drain(exchange, limit: limit)
        }
    }

    func applyPause(for exchange: TransportExchange) {
        if channel.eventLoop.inEventLoop {
            streams.value.handlers[ObjectIdentifier(exchange)]?.setPaused(exchange.isPausedForHandler, for: exchange)
            return
        }
        let streams = self.streams
        channel.eventLoop.execute {
            streams.value.handlers[ObjectIdentifier(exchange)]?.setPaused(exchange.isPausedForHandler, for: exchange)
        }
    }

    func close() {
        channel.close(promise: nil)
    }

    // MARK: - Streams

    private func open(_ exchange: TransportExchange, isReused: Bool, streams: Streams) {
        let exchangeID = ObjectIdentifier(exchange)
        // The pool leases off the event loop: an exchange may be leased just before the connection's close (for the
        // server's protocol error, found in the same read as the reset that failed the previous exchange) takes it
        // out of the pool. The close is known here, as this runs after that read; its pending close (TLS's
        // close_notify) leaves the channel active meanwhile.
        guard !streams.isClosed, !streams.monitor.isClosing, streams.monitor.goAwayLastStreamID == nil else {
            // Nothing was sent: another connection may run it, whatever its method (RFC 9113 §8.7). The monitor took
            // this one out of the pool as it began to close, so the retry goes elsewhere.
            exchange.connectionFailed(.networkConnectionLost("the HTTP/2 connection is going away"), retryable: true)
            streams.pool?.release(self)
            return
        }
        let handler = HTTP1ClientHandler(
            endpoint: key.endpoint, idleConnectionTimeout: streams.idleConnectionTimeout, protocolName: "h2",
            isStream: true)
        handler.establishment = streams.establishment
        handler.streamHost = self
        // The stream's slot goes back to the pool exactly once, however the stream ends (the handler reports both
        // its end and its channel's close): the handler holds the slot until then. The table is no guide: once an
        // exchange ended, another may be made at its address and open a stream here, replacing this handler's entry,
        // before this stream's channel reports its close. Unowned: a handler runs its own callbacks only while alive.
        handler.holdsStreamSlot = true
        let release: () -> Void = { [self, unowned handler] in streamEnded(exchangeID, handler: handler) }
        handler.onReusable = release
        handler.onClosed = release
        streams.handlers[exchangeID] = handler
        let created = channel.eventLoop.makePromise(of: (any Channel).self)
        // Stream channels share the connection's event loop.
        let boundHandler = NIOLoopBound(handler, eventLoop: channel.eventLoop)
        streams.multiplexer.createStreamChannel(promise: created) { streamChannel in
            streamChannel.eventLoop.makeCompletedFuture {
                let sync = streamChannel.pipeline.syncOperations
                try sync.addHandler(HTTP2FramePayloadToHTTP1ClientCodec(httpProtocol: .https))
                try sync.addHandler(boundHandler.value)
            }
        }
        created.futureResult.assumeIsolated().whenComplete { result in
            switch result {
            case .success:
                boundHandler.value.start(exchange, isReused: isReused)
            case .failure(let error):
                exchange.connectionFailed(
                    .networkConnectionLost("cannot open an HTTP/2 stream to \(self.key.endpoint): \(error)"),
                    retryable: true)
                self.streamEnded(exchangeID, handler: boundHandler.value)
            }
        }
    }

    /// Gives a stream's slot back to the pool, once per handler, and removes the handler from the table if it is
    /// still the one registered for its exchange. On the event loop.
    private func streamEnded(_ exchangeID: ObjectIdentifier, handler: HTTP1ClientHandler) {
        guard handler.holdsStreamSlot else { return }
        handler.holdsStreamSlot = false
        let streams = self.streams.value
        if streams.handlers[exchangeID] === handler { streams.handlers[exchangeID] = nil }
        streams.pool?.release(self)
    }
}

// MARK: - HTTP2StreamHost

extension HTTP2Connection: HTTP2StreamHost {
    func streamWasUnprocessed(_ error: any Error) -> Bool {
        guard let closed = error as? NIOHTTP2Errors.StreamClosed else { return false }
        if closed.errorCode == .refusedStream { return true }
        // NIOHTTP2 closes the streams a GOAWAY leaves unprocessed with CANCEL, after passing the GOAWAY on.
        guard let lastStreamID = streams.value.monitor.goAwayLastStreamID else { return false }
        return Int(closed.streamID) > lastStreamID
    }

    func streamFailure(_ error: any Error) -> TransferError? {
        // NIOHTTP2 tells the stream only that it was reset; the monitor knows whether NIOHTTP2 reset it for the
        // server's protocol error (a malformed response) rather than the server resetting it.
        guard let closed = error as? NIOHTTP2Errors.StreamClosed,
            let reset = streams.value.monitor.streamResetForServerError, reset == closed.streamID
        else { return nil }
        return TransportErrorMapping.malformedStreamError(closed, endpoint: key.endpoint)
    }

    func connectionFailure() -> TransferError? {
        guard let violation = streams.value.monitor.protocolViolation else { return nil }
        return TransportErrorMapping.connectionViolationError(violation, endpoint: key.endpoint)
    }
}
