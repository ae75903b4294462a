import CourierHTTP
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// The HTTP/1.1 keep-alive pool: leases connections to exchanges, opens new ones up to the per-host limit,
/// queues requests beyond it, and parks finished connections for reuse.
///
/// The bookkeeping is ``PoolStateMachine`` under a lock; all I/O happens after the lock is released.
final class ConnectionPool: Sendable {
    private typealias Machine = PoolStateMachine<PoolKey, HTTP1Connection, TransportExchange>

    private let machine: NIOLockedValueBox<Machine>
    private let nextConnectionID = NIOLockedValueBox(0)
    private let factory: ConnectionFactory
    private let logger: Logger

    init(factory: ConnectionFactory, maxConnectionsPerHost: Int, logger: Logger) {
        self.factory = factory
        self.machine = NIOLockedValueBox(Machine(maxConnectionsPerHost: maxConnectionsPerHost))
        self.logger = logger
    }

    /// Finds or opens a connection for `exchange`, or queues it.
    func lease(for exchange: TransportExchange) {
        let key = PoolKey(request: exchange.request)
        let action = machine.withLockedValue { $0.lease(key, for: exchange) }
        switch action {
        case .use(let connection):
            run(exchange, on: connection, isReused: true)
        case .connect:
            connect(key, for: exchange)
        case .wait:
            exchange.markWaiting(timerLoop: factory.group.any())
        case .failShutdown:
            exchange.connectionFailed(.cancelled("the session was invalidated"), retryable: false)
        }
    }

    /// A connection finished a request and can take another.
    func release(_ connection: HTTP1Connection) {
        let action = machine.withLockedValue { $0.release(connection.key, connection) }
        perform(action, key: connection.key)
    }

    /// A connection closed.
    func connectionClosed(_ connection: HTTP1Connection) {
        let action = machine.withLockedValue { $0.closed(connection.key, connection) }
        perform(action, key: connection.key)
    }

    /// Removes a cancelled exchange from the waiting queue.
    func cancelWaiter(_ exchange: TransportExchange) {
        let key = PoolKey(request: exchange.request)
        _ = machine.withLockedValue { $0.cancelWaiter(key, exchange) }
    }

    /// Closes idle connections and fails waiting requests; busy connections close when their request ends.
    func shutdown() {
        let (idle, waiters) = machine.withLockedValue { $0.shutdown() }
        for connection in idle { connection.close() }
        for waiter in waiters { waiter.connectionFailed(.cancelled("the session was invalidated"), retryable: false) }
    }

    private func perform(_ action: Machine.ReleaseAction, key: PoolKey) {
        switch action {
        case .none:
            break
        case .hand(let connection, let waiter):
            run(waiter, on: connection, isReused: true)
        case .connect(let waiter):
            connect(key, for: waiter)
        case .close(let connection):
            connection.close()
        }
    }

    private func run(_ exchange: TransportExchange, on connection: HTTP1Connection, isReused: Bool) {
        if exchange.attach(connection) {
            connection.execute(exchange, isReused: isReused)
        } else {
            // Cancelled while waiting for this connection: give it back.
            release(connection)
        }
    }

    private func connect(_ key: PoolKey, for exchange: TransportExchange) {
        let id = nextConnectionID.withLockedValue { value in
            value += 1
            return value
        }
        logger.debug("opening connection", metadata: ["connection": "\(id)", "endpoint": "\(key.endpoint)"])
        factory.connect(
            key: key,
            id: id,
            connectTimeout: exchange.request.idleTimeout,
            trustEvaluator: exchange.request.trustEvaluator
        ).whenComplete { result in
            switch result {
            case .success(let connection):
                connection.channel.eventLoop.execute {
                    if !connection.channel.isActive {
                        // It closed before the handler could report it (and it is never bound, so no cycle).
                        self.connectionClosed(connection)
                        exchange.connectionFailed(.networkConnectionLost("the connection closed"), retryable: true)
                        return
                    }
                    connection.bind(to: self)
                    self.run(exchange, on: connection, isReused: false)
                }
            case .failure(let error):
                let action = self.machine.withLockedValue { $0.closed(key, nil) }
                let transfer = error as? TransferError ?? .cannotConnectToHost("\(error)")
                exchange.connectionFailed(transfer, retryable: false)
                self.perform(action, key: key)
            }
        }
    }
}
