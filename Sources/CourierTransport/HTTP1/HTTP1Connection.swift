import CourierHTTP
import NIOCore

/// A pooled HTTP/1.1 connection: its channel and the handler that runs exchanges on it, one at a time.
final class HTTP1Connection: PooledConnection, Hashable, Sendable {
    let id: Int
    let key: PoolKey
    let channel: any Channel
    private let handler: NIOLoopBound<HTTP1ClientHandler>

    init(id: Int, key: PoolKey, channel: any Channel, handler: NIOLoopBound<HTTP1ClientHandler>) {
        self.id = id
        self.key = key
        self.channel = channel
        self.handler = handler
    }

    /// What the pool accounts this connection as: HTTP/1.1.
    var applicationProtocol: ApplicationProtocol { .http1 }

    /// The exchanges it runs at once: one.
    var capacity: Int { 1 }

    /// Whether it is still open.
    var acceptsExchanges: Bool { channel.isActive }

    /// Runs `exchange` on this connection.
    func execute(_ exchange: TransportExchange, isReused: Bool) {
        let handler = self.handler
        channel.eventLoop.execute {
            handler.value.start(exchange, isReused: isReused)
        }
    }

    func cancel(_ exchange: TransportExchange, error: TransferError) {
        let handler = self.handler
        channel.eventLoop.execute {
            handler.value.cancel(exchange, error: error)
        }
    }

    func drain(_ exchange: TransportExchange, limit: Int) {
        let handler = self.handler
        channel.eventLoop.execute {
            handler.value.drain(exchange, limit: limit)
        }
    }

    func applyPause(for exchange: TransportExchange) {
        // On the loop already (the consumer pausing from inside an event): act now, so no further read is
        // issued after this event.
        if channel.eventLoop.inEventLoop {
            handler.value.setPaused(exchange.isPausedForHandler, for: exchange)
            return
        }
        let handler = self.handler
        channel.eventLoop.execute {
            handler.value.setPaused(exchange.isPausedForHandler, for: exchange)
        }
    }

    /// Wires the handler's callbacks to the pool. Must run on the channel's event loop.
    func bind(to pool: ConnectionPool) {
        let handler = self.handler.value
        handler.onReusable = { [weak pool] in pool?.release(self) }
        handler.onClosed = { [weak pool] in pool?.connectionClosed(self) }
        handler.onUpgraded = { [weak pool] in pool?.detach(self) }
    }

    func close() {
        channel.close(promise: nil)
    }

    static func == (lhs: HTTP1Connection, rhs: HTTP1Connection) -> Bool { lhs === rhs }
    func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
