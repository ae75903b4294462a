import CourierHTTP
import Logging
import NIOCore
import NIOPosix

/// The network transport of one URL session: a connection pool over SwiftNIO speaking HTTP/1.1 and HTTPS.
public final class HTTPTransport: Transport {
    /// Pool-wide settings.
    public struct Configuration: Sendable {
        /// Connections opened at most per scheme, host, port and TLS settings (Darwin's default is 6).
        public var maximumConnectionsPerHost: Int
        /// How long a keep-alive connection may stay unused before it is closed.
        public var idleConnectionTimeout: TimeAmount
        /// Told the pool's totals after every change, outside the pool's lock (for gauges); `nil` costs nothing.
        public var poolObserver: (@Sendable (PoolStatistics) -> Void)?

        /// Creates a configuration.
        public init(
            maximumConnectionsPerHost: Int = 6, idleConnectionTimeout: TimeAmount = .seconds(60),
            poolObserver: (@Sendable (PoolStatistics) -> Void)? = nil
        ) {
            self.maximumConnectionsPerHost = maximumConnectionsPerHost
            self.idleConnectionTimeout = idleConnectionTimeout
            self.poolObserver = poolObserver
        }
    }

    private let pool: ConnectionPool
    private let eventLoopGroup: any EventLoopGroup

    /// Creates a transport on the shared event loop group.
    public init(
        configuration: Configuration = Configuration(),
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger = Logger(label: "courier.transport")
    ) {
        self.eventLoopGroup = eventLoopGroup
        let factory = ConnectionFactory(
            group: eventLoopGroup,
            tlsContexts: TLSContextCache.shared,
            idleConnectionTimeout: configuration.idleConnectionTimeout
        )
        self.pool = ConnectionPool(
            factory: factory,
            maxConnectionsPerHost: configuration.maximumConnectionsPerHost,
            logger: logger,
            observer: configuration.poolObserver
        )
    }

    /// Starts `request`; events go to `consumer`. The returned exchange cancels, pauses and resumes it.
    @discardableResult
    public func execute(_ request: TransportRequest, consumer: any TransportResponseConsumer) -> any ExchangeHandle {
        let exchange = TransportExchange(request: request, consumer: consumer, pool: pool)
        pool.lease(for: exchange)
        return exchange
    }

    /// Closes idle connections and fails queued requests. Requests already running finish.
    public func shutdown() {
        pool.shutdown()
    }

    /// Closes the connections that run nothing, so that the next requests start on new ones.
    public func closeIdleConnections() {
        pool.closeIdleConnections()
    }

    /// A stream task's raw connection, on the transport's event loop group (outside the pool: it never carries a
    /// request, and it does not count against `maximumConnectionsPerHost`).
    public func makeStreamConnection(
        host: String, port: Int, onEvent: @escaping @Sendable (StreamConnectionEvent) -> Void
    ) -> StreamConnection {
        StreamConnection(host: host, port: port, eventLoop: eventLoopGroup.next(), onEvent: onEvent)
    }
}
