import CourierHTTP
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// The connection pool: leases connections to exchanges, opens new ones up to the per-host limit, queues requests
/// beyond it, parks finished connections for reuse, and lets a connection be detached (handed over for good).
///
/// The bookkeeping is ``PoolStateMachine`` under a lock; all I/O and callbacks happen after the lock is released.
/// Connections speak HTTP/1.1 (``HTTP1Connection``) or HTTP/2 (``HTTP2Connection``, one stream per exchange).
final class ConnectionPool: Sendable {
    private typealias Machine = PoolStateMachine<PoolKey, PooledConnectionRef, TransportExchange>

    private let machine: NIOLockedValueBox<Machine>
    private let nextConnectionID = NIOLockedValueBox(0)
    private let factory: ConnectionFactory
    private let logger: Logger
    private let observer: (@Sendable (PoolStatistics) -> Void)?
    private let statisticsSequence = NIOLockedValueBox(0)
    /// Holds the deadlines of the requests waiting in the queue.
    let deadlines: DeadlineScheduler

    /// Makes a pool that opens connections with `factory`, at most `maxConnectionsPerHost` per key, and tells
    /// `observer` its totals after every change. Queued requests' deadlines go to `deadlines`.
    init(
        factory: ConnectionFactory, maxConnectionsPerHost: Int, logger: Logger,
        observer: (@Sendable (PoolStatistics) -> Void)? = nil, deadlines: DeadlineScheduler = .shared
    ) {
        self.factory = factory
        self.deadlines = deadlines
        self.machine = NIOLockedValueBox(Machine(maxConnectionsPerHost: maxConnectionsPerHost))
        self.logger = logger
        self.observer = observer
    }

    /// Changes the machine under its lock; with an observer, reads the totals in the same critical section and
    /// reports them after the lock is released (numbered, as reports from two threads may arrive out of order).
    private func mutate<Result>(_ change: (inout Machine) -> Result) -> Result {
        guard let observer else { return machine.withLockedValue(change) }
        let (result, statistics) = machine.withLockedValue { machine -> (Result, PoolStatistics) in
            let result = change(&machine)
            let totals = machine.totals()
            let sequence = statisticsSequence.withLockedValue { value in
                value += 1
                return value
            }
            return (
                result,
                PoolStatistics(
                    sequence: sequence, connecting: totals.connecting, idle: totals.idle, busy: totals.busy,
                    waiting: totals.waiting)
            )
        }
        observer(statistics)
        return result
    }

    /// Finds or opens a connection for `exchange`, or queues it.
    func lease(for exchange: TransportExchange) {
        let key = PoolKey(request: exchange.request)
        let mayMultiplex = key.tls?.applicationProtocols == .http2AndHTTP1
        let (action, generation) = mutate { ($0.lease(key, for: exchange, mayMultiplex: mayMultiplex), $0.generation) }
        switch action {
        case .use(let connection):
            run(exchange, on: connection.connection, isReused: true)
        case .connect:
            connect(key, for: exchange, generation: generation)
        case .wait:
            exchange.markWaiting()
        case .failShutdown:
            exchange.connectionFailed(.cancelled("the session was invalidated"), retryable: false)
        }
    }

    /// A connection finished a request (for HTTP/2: a stream ended) and can take another.
    func release(_ connection: any PooledConnection) {
        let (action, generation) = mutate { machine in
            (machine.release(connection.key, PooledConnectionRef(connection)), machine.generation)
        }
        perform(action, key: connection.key, generation: generation)
    }

    /// A connection closed.
    func connectionClosed(_ connection: any PooledConnection) {
        let (action, generation) = mutate { machine in
            (machine.closed(connection.key, PooledConnectionRef(connection)), machine.generation)
        }
        perform(action, key: connection.key, generation: generation)
    }

    /// The peer of a multiplexed connection changed how many streams it may run at once.
    func capacityChanged(_ connection: any PooledConnection, to capacity: Int) {
        let assignments = mutate {
            $0.capacityChanged(connection.key, PooledConnectionRef(connection), capacity: capacity)
        }
        for assignment in assignments {
            run(assignment.waiter, on: assignment.connection.connection, isReused: true)
        }
    }

    /// A multiplexed connection is going away (HTTP/2 `GOAWAY`): its running streams finish, new requests go to
    /// other connections.
    func retire(_ connection: any PooledConnection) {
        detach(connection)
    }

    /// Takes `connection` out of the pool for good (handed over to a WebSocket or stream task): it is never leased
    /// again, its release or close is ignored, and its slot may open a connection for a waiting request. The new
    /// owner closes it.
    func detach(_ connection: any PooledConnection) {
        let (action, generation) = mutate { machine in
            (machine.detach(connection.key, PooledConnectionRef(connection)), machine.generation)
        }
        perform(action, key: connection.key, generation: generation)
    }

    /// Removes a cancelled exchange from the waiting queue.
    func cancelWaiter(_ exchange: TransportExchange) {
        let key = PoolKey(request: exchange.request)
        _ = mutate { $0.cancelWaiter(key, exchange) }
    }

    /// Closes idle connections and fails waiting requests; busy connections close when their request ends.
    func shutdown() {
        let (idle, waiters) = mutate { $0.shutdown() }
        for connection in idle { connection.connection.close() }
        for waiter in waiters { waiter.connectionFailed(.cancelled("the session was invalidated"), retryable: false) }
    }

    /// Closes the connections that run nothing; the pool stays open and later requests open new connections.
    func closeIdleConnections() {
        let idle = mutate { $0.takeIdleConnections() }
        for connection in idle { connection.connection.close() }
    }

    /// Carries out what the machine decided after a release, close or detach; `generation` is the machine's as it
    /// decided (read under the same lock), for a connection it asks to open.
    private func perform(_ action: Machine.ReleaseAction, key: PoolKey, generation: Int) {
        switch action {
        case .none:
            break
        case .hand(let connection, let waiter):
            run(waiter, on: connection.connection, isReused: true)
        case .connect(let waiter):
            connect(key, for: waiter, generation: generation)
        case .close(let connection):
            connection.connection.close()
        }
    }

    /// Runs `exchange` on `connection`, or gives the connection back if the exchange was cancelled meanwhile.
    private func run(_ exchange: TransportExchange, on connection: any PooledConnection, isReused: Bool) {
        if exchange.attach(connection) {
            connection.execute(exchange, isReused: isReused)
        } else {
            // Cancelled while waiting for this connection: give it back.
            release(connection)
        }
    }

    /// Opens a connection for `exchange` (the machine counted it as connecting) and reports how that went.
    /// `generation` is the machine's when it decided to connect: a reset meanwhile retires the connection as it
    /// opens (see ``PoolStateMachine/connected(_:_:protocol:capacity:for:generation:)``).
    private func connect(_ key: PoolKey, for exchange: TransportExchange, generation: Int) {
        let id = nextConnectionID.withLockedValue { value in
            value += 1
            return value
        }
        logger.debug("opening connection", metadata: ["connection": "\(id)", "endpoint": "\(key.endpoint)"])
        factory.connect(
            key: key,
            id: id,
            connectTimeout: exchange.request.idleTimeout,
            trustEvaluator: exchange.request.trustEvaluator,
            clientCertificateProvider: exchange.request.clientCertificateProvider,
            tunnelAuthorization: exchange.request.tunnelAuthorization
        ).whenComplete { result in
            switch result {
            case .success(let connection):
                connection.channel.eventLoop.execute {
                    self.opened(connection, for: exchange, generation: generation)
                }
            case .failure(let error):
                let (action, current) = self.mutate { ($0.closed(key, nil), $0.generation) }
                if let refusal = error as? ProxyTunnelRefusal {
                    exchange.tunnelRefused(refusal)
                } else {
                    let transfer = error as? TransferError ?? .cannotConnectToHost("\(error)")
                    exchange.connectFailed(transfer, timerLoop: self.factory.group.any())
                }
                self.perform(action, key: key, generation: current)
            }
        }
    }

    /// A connection opened for `exchange`: reports its protocol and capacity and runs the exchanges the machine
    /// assigns to it. Runs on the connection's event loop.
    private func opened(_ connection: any PooledConnection, for exchange: TransportExchange, generation: Int) {
        let key = connection.key
        if !connection.acceptsExchanges {
            // It closed, or its server sent GOAWAY with its first SETTINGS, before the handler could report it: a
            // failed connect. Nothing was sent on it, so the request goes to another connection whatever its method
            // (RFC 9113 §8.7). It is never bound (so no cycle) nor leased; one going away is closed here.
            let (action, current) = mutate { ($0.closed(key, nil), $0.generation) }
            perform(action, key: key, generation: current)
            connection.close()
            exchange.connectionFailed(.networkConnectionLost("the connection closed"), retryable: true)
            return
        }
        connection.bind(to: self)
        let (assignments, connecting, current) = mutate { machine in
            let assignments = machine.connected(
                key, PooledConnectionRef(connection), protocol: connection.applicationProtocol,
                capacity: connection.capacity, for: exchange, generation: generation)
            return (assignments, machine.connectForWaiters(key), machine.generation)
        }
        for (index, assignment) in assignments.enumerated() {
            // The first exchange on a connection is the one that pays for its set-up; on HTTP/2 the streams that
            // join it at once share the connection, as a reused one.
            run(assignment.waiter, on: assignment.connection.connection, isReused: index > 0)
        }
        for waiter in connecting {
            connect(key, for: waiter, generation: current)
        }
    }
}
