import NIOCore

/// A connection the pool owns, whatever its protocol: an HTTP/1.1 connection runs one exchange at a time, an
/// HTTP/2 connection one per stream. The pool sees only this; exchanges see only ``ExchangeExecutor``.
protocol PooledConnection: ExchangeExecutor {
    /// The connection's number, for logs.
    var id: Int { get }
    /// What makes it interchangeable with other connections.
    var key: PoolKey { get }
    /// Its channel (the TCP or TLS connection).
    var channel: any Channel { get }
    /// The protocol it speaks.
    var applicationProtocol: ApplicationProtocol { get }
    /// How many exchanges it may run at once when it opens.
    var capacity: Int { get }
    /// Whether it can take exchanges: it is open and, for HTTP/2, the server has not sent `GOAWAY`. Read on the
    /// channel's event loop, when the connection reaches the pool.
    var acceptsExchanges: Bool { get }
    /// Wires the connection's events (an exchange ended, the connection closed, ...) to `pool`. Runs on the
    /// channel's event loop, once, before the first exchange.
    func bind(to pool: ConnectionPool)
    /// Closes the connection.
    func close()
}

/// A pooled connection as a value the pool's state machine can keep in sets and compare: by identity.
struct PooledConnectionRef: Hashable, Sendable {
    let connection: any PooledConnection

    init(_ connection: any PooledConnection) {
        self.connection = connection
    }

    static func == (lhs: PooledConnectionRef, rhs: PooledConnectionRef) -> Bool {
        lhs.connection === rhs.connection
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(connection))
    }
}
