import NIOCore

/// The bookkeeping of the connection pool, without I/O: events in, actions out.
///
/// For every key (scheme, host, port, TLS settings) it tracks each connection: `connecting` (opened for a request;
/// its protocol is unknown until the connect and ALPN finish), then ready with its protocol, capacity and the
/// exchanges it runs, until it closes. The per-protocol rules live in ``HTTP1Connections`` (one exchange per
/// connection, idle ones reused LIFO) and ``MultiplexedConnections`` (up to the capacity per connection, the one
/// with the most free streams first). Requests that find no free connection wait in a FIFO queue.
///
/// `maxConnectionsPerHost` bounds connecting + ready connections per key. A detached connection (handed over to a
/// WebSocket or stream task) leaves the accounting entirely: its slot frees up, and the pool never leases it
/// again and ignores its release or close. The owner runs each event under a lock and acts after unlocking.
struct PoolStateMachine<Key: Hashable, Connection: Hashable, Waiter: Hashable> {
    /// What to do with a request that asks for a connection.
    enum LeaseAction: Equatable {
        /// Run it on this connection (reused, or a free stream of a multiplexed one).
        case use(Connection)
        /// Open a new connection for it, then report
        /// ``PoolStateMachine/connected(_:_:protocol:capacity:for:generation:)``.
        case connect
        /// It waits in the queue for a connection.
        case wait
        /// The pool is shut down.
        case failShutdown
    }

    /// What to do after an exchange ended on a connection, a connection closed, or one was detached.
    enum ReleaseAction: Equatable {
        /// Run the waiter on this connection.
        case hand(Connection, to: Waiter)
        /// Open a new connection for the waiter.
        case connect(for: Waiter)
        /// Nothing to do (the connection is parked idle, nobody waits, or it is not the pool's).
        case none
        /// Close the connection (the pool is shut down and it runs nothing).
        case close(Connection)
    }

    /// A waiter to run on a connection.
    struct Assignment: Equatable {
        /// The connection.
        let connection: Connection
        /// The request to run on it.
        let waiter: Waiter
    }

    /// A key's connections and waiters, for tests and metrics.
    struct Counts: Equatable {
        /// Connections being opened (protocol unknown).
        var connecting = 0
        /// Ready connections that run nothing.
        var idle = 0
        /// Ready connections that run at least one exchange.
        var busy = 0
        /// Exchanges running on ready connections.
        var inFlight = 0
        /// Requests waiting for a connection.
        var waiting = 0
    }

    /// One key's connections, by state and protocol, and its queue.
    fileprivate struct Host {
        /// Connections being opened, protocol unknown (identified only when they report `connected`).
        var connecting = 0
        /// Ready HTTP/1 connections.
        var http1 = HTTP1Connections<Connection>()
        /// Ready multiplexed connections.
        var multiplexed = MultiplexedConnections<Connection>()
        /// Requests waiting for a connection, first come first served.
        var waiters = CircularBuffer<Waiter>()
        /// The protocol the key's last connection turned out to speak. While a connection to a key known to be
        /// multiplexed is being opened, further requests wait for its streams instead of opening more connections.
        var knownProtocol: ApplicationProtocol?
        /// Whether the key's connections may turn out multiplexed (TLS offering `h2`): until the first one has told,
        /// it is assumed they will.
        var mayMultiplex = false
        /// Ready connections that were busy when ``PoolStateMachine/takeIdleConnections()`` ran (`URLSession.reset`
        /// and `flush`): they finish what they run, take nothing new, and are closed then, so that every later
        /// request starts on a new connection, as Darwin promises. They stay counted until they close.
        var retiring: Set<Connection> = []

        /// Whether a new connection may be opened for a request that found no free one: below the limit, and not
        /// while a connection that will (or may) carry many streams is being opened — its streams serve the rest.
        func mayConnect(limit: Int) -> Bool {
            guard connectionCount < limit else { return false }
            let multiplexed = knownProtocol?.isMultiplexed ?? mayMultiplex
            return !(multiplexed && connecting > 0)
        }

        /// The connections that count against the limit.
        var connectionCount: Int { connecting + http1.count + multiplexed.count }
        /// Whether the key can be forgotten.
        var isEmpty: Bool { connectionCount == 0 && waiters.isEmpty }

        /// Forgets a ready connection; `false` if it is not (or no longer) the pool's.
        mutating func remove(_ connection: Connection) -> Bool {
            retiring.remove(connection)
            return http1.remove(connection) || multiplexed.remove(connection)
        }
    }

    private var hosts: [Key: Host] = [:]
    /// Whether ``shutdown()`` ran.
    private(set) var isShutdown = false
    /// Counts the calls of ``takeIdleConnections()`` (`URLSession.reset` and `flush`). A connection being opened is
    /// not yet known to the machine (only counted), so the owner notes the generation when it starts to open one and
    /// passes it to ``connected(_:_:protocol:capacity:for:generation:)``: one opened for an earlier generation is
    /// retired as it arrives, as the connections that were busy at the reset are.
    private(set) var generation = 0
    /// The most connections (connecting + ready) per key.
    let maxConnectionsPerHost: Int

    /// A pool that opens at most `maxConnectionsPerHost` connections per key (at least one).
    init(maxConnectionsPerHost: Int) {
        self.maxConnectionsPerHost = max(1, maxConnectionsPerHost)
    }

    /// A request asks for a connection to `key`: a free stream of a multiplexed connection, else an idle HTTP/1
    /// connection, else a new connection below the limit, else the queue. `mayMultiplex` says that the key's
    /// connections may speak a multiplexed protocol (TLS offering `h2`): then the first burst of requests to it
    /// opens one connection and waits for what it negotiates, instead of opening one connection each.
    mutating func lease(_ key: Key, for waiter: Waiter, mayMultiplex: Bool = false) -> LeaseAction {
        if isShutdown { return .failShutdown }
        let limit = maxConnectionsPerHost
        return withHost(key, creating: true) { host in
            host.mayMultiplex = mayMultiplex
            if let connection = host.multiplexed.leaseStream() ?? host.http1.leaseIdle() {
                return .use(connection)
            }
            if host.mayConnect(limit: limit) {
                host.connecting += 1
                return .connect
            }
            host.waiters.append(waiter)
            return .wait
        } ?? .wait
    }

    /// A connection opened for `trigger` (after a `connect` action) speaks `protocol` and runs up to `capacity`
    /// exchanges at once. It runs `trigger` and, when multiplexed, further waiters up to its capacity; HTTP/1 runs
    /// one exchange whatever `capacity` says, and a multiplexed capacity below 1 counts as 1.
    ///
    /// `generation` is ``generation`` as it was when the connect began (`nil`: the current one). A connection that
    /// began to open before ``takeIdleConnections()`` ran (a `reset` or `flush` came while it connected) runs only
    /// `trigger`, a request made before the reset, and closes when it ends: it is never parked for reuse nor given
    /// a waiter, so that every request made after the reset starts on a new connection.
    mutating func connected(
        _ key: Key,
        _ connection: Connection,
        protocol applicationProtocol: ApplicationProtocol,
        capacity: Int,
        for trigger: Waiter,
        generation: Int? = nil
    ) -> [Assignment] {
        let isStale = (generation ?? self.generation) < self.generation
        return withHost(key, creating: true) { host in
            host.connecting = max(0, host.connecting - 1)
            host.knownProtocol = applicationProtocol
            var assignments = [Assignment(connection: connection, waiter: trigger)]
            if isStale {
                host.retiring.insert(connection)
                if applicationProtocol.isMultiplexed {
                    // No free stream: the trigger's ends it, and `release` then closes it.
                    host.multiplexed.add(
                        connection, applicationProtocol: applicationProtocol, capacity: 0, inFlight: 1)
                } else {
                    host.http1.addBusy(connection)
                }
                return assignments
            }
            guard applicationProtocol.isMultiplexed else {
                host.http1.addBusy(connection)
                return assignments
            }
            let capacity = max(1, capacity)
            while assignments.count < capacity, let waiter = host.waiters.popFirst() {
                assignments.append(Assignment(connection: connection, waiter: waiter))
            }
            host.multiplexed.add(
                connection, applicationProtocol: applicationProtocol, capacity: capacity, inFlight: assignments.count)
            return assignments
        } ?? []
    }

    /// A multiplexed connection's peer changed how many streams it may run at once (HTTP/2's
    /// SETTINGS_MAX_CONCURRENT_STREAMS); waiters get the streams that became free. Below 1 counts as 1, as in
    /// ``connected(_:_:protocol:capacity:for:generation:)``.
    mutating func capacityChanged(_ key: Key, _ connection: Connection, capacity: Int) -> [Assignment] {
        withHost(key) { host in
            // A retiring connection starts no new stream, whatever its peer allows.
            guard !host.retiring.contains(connection),
                host.multiplexed.setCapacity(max(1, capacity), of: connection)
            else { return [] }
            var assignments: [Assignment] = []
            while !host.waiters.isEmpty, host.multiplexed.leaseStream(on: connection) {
                if let waiter = host.waiters.popFirst() {
                    assignments.append(Assignment(connection: connection, waiter: waiter))
                }
            }
            return assignments
        } ?? []
    }

    /// Waiters that may open connections of their own now: after a connection turned out to speak HTTP/1.1 while
    /// requests waited for what was thought to be a multiplexed one, each gets a connection up to the limit.
    mutating func connectForWaiters(_ key: Key) -> [Waiter] {
        let limit = maxConnectionsPerHost
        return withHost(key) { host in
            var connecting: [Waiter] = []
            while host.mayConnect(limit: limit), let waiter = host.waiters.popFirst() {
                host.connecting += 1
                connecting.append(waiter)
            }
            return connecting
        } ?? []
    }

    /// An exchange on `connection` ended and the connection can run another: the first waiter gets it, else it
    /// waits idle (HTTP/1) or has a free stream more (multiplexed). After shutdown, a connection that runs nothing
    /// more is closed; it stays counted until its close.
    mutating func release(_ key: Key, _ connection: Connection) -> ReleaseAction {
        let isShutdown = isShutdown
        return withHost(key) { host in
            if host.http1.isRunning(connection) {
                if isShutdown || host.retiring.contains(connection) { return .close(connection) }
                if let waiter = host.waiters.popFirst() { return .hand(connection, to: waiter) }
                host.http1.park(connection)
                return .none
            }
            if host.multiplexed.isRunning(connection) {
                let remaining = host.multiplexed.endStream(connection)
                // The freed stream goes to the first waiter, unless the peer lowered the capacity below what runs.
                if !host.waiters.isEmpty, host.multiplexed.leaseStream(on: connection),
                    let waiter = host.waiters.popFirst()
                {
                    return .hand(connection, to: waiter)
                }
                let closes = isShutdown || host.retiring.contains(connection)
                return closes && remaining == 0 ? .close(connection) : .none
            }
            // Not the pool's (detached), or released twice.
            return .none
        } ?? .none
    }

    /// A connection closed, or a connection attempt failed (`connection == nil`). Its slot may go to a waiter.
    /// The close of a connection the pool does not track (detached, or dropped at shutdown) is ignored.
    mutating func closed(_ key: Key, _ connection: Connection?) -> ReleaseAction {
        let limit = maxConnectionsPerHost
        return withHost(key) { host in
            if let connection {
                guard host.remove(connection) else { return .none }
            } else {
                guard host.connecting > 0 else { return .none }
                host.connecting -= 1
            }
            return Self.connectForFirstWaiter(&host, limit: limit)
        } ?? .none
    }

    /// `connection` was handed over (to a WebSocket or stream task), or is going away (an HTTP/2 `GOAWAY`: its
    /// running streams finish, no new ones start), and leaves the pool's accounting: it is never leased again, its
    /// later release or close is ignored, and its slot may go to a waiter.
    mutating func detach(_ key: Key, _ connection: Connection) -> ReleaseAction {
        let limit = maxConnectionsPerHost
        return withHost(key) { host in
            guard host.remove(connection) else { return .none }
            return Self.connectForFirstWaiter(&host, limit: limit)
        } ?? .none
    }

    /// A waiting request was cancelled; `true` if it was still waiting.
    mutating func cancelWaiter(_ key: Key, _ waiter: Waiter) -> Bool {
        withHost(key) { host in
            guard let index = host.waiters.firstIndex(of: waiter) else { return false }
            host.waiters.remove(at: index)
            return true
        } ?? false
    }

    /// Shuts the pool down: returns the connections that run nothing (to close; the pool forgets them) and the
    /// waiters (to fail). Busy connections close when their last exchange ends; a connection still being opened
    /// runs the request it was opened for. Detached connections are not the pool's.
    mutating func shutdown() -> (idle: [Connection], waiters: [Waiter]) {
        isShutdown = true
        var idle: [Connection] = []
        var waiters: [Waiter] = []
        for key in Array(hosts.keys) {
            withHost(key) { host in
                idle += host.http1.takeIdle() + host.multiplexed.takeIdle()
                waiters += host.waiters
                host.waiters.removeAll()
            }
        }
        return (idle, waiters)
    }

    /// Takes the connections that run nothing out of the pool (to close), leaving it open, and retires the busy
    /// ones: they finish their exchanges, take no new one (not even a free HTTP/2 stream), and ``release(_:_:)``
    /// closes them when their last exchange ends; connections still being opened are retired as they open (see
    /// ``connected(_:_:protocol:capacity:for:generation:)``). Later requests open new connections
    /// (`URLSession.flush` and `reset`: "future requests occur on a new socket"; a request in flight must not hand
    /// its connection, with the TLS identity and trust it was approved with, to the requests made after).
    mutating func takeIdleConnections() -> [Connection] {
        // Connections still being opened belong to the generation that ends here (see `connected`).
        generation += 1
        var idle: [Connection] = []
        for key in Array(hosts.keys) {
            withHost(key) { host in
                idle += host.http1.takeIdle() + host.multiplexed.takeIdle()
                host.retiring.formUnion(host.http1.busy)
                for entry in host.multiplexed.entries {
                    host.retiring.insert(entry.connection)
                    // No free stream is left to lease; the ones running finish.
                    _ = host.multiplexed.setCapacity(0, of: entry.connection)
                }
            }
        }
        return idle
    }

    /// Counts for tests and metrics: `busy` is every connection that is not idle, connecting ones included.
    func counts(_ key: Key) -> (idle: Int, busy: Int, waiting: Int) {
        let counts = detailedCounts(key)
        return (counts.idle, counts.connecting + counts.busy, counts.waiting)
    }

    /// Every key's counts added up, for the pool's statistics.
    func totals() -> Counts {
        hosts.keys.reduce(into: Counts()) { sum, key in
            let counts = detailedCounts(key)
            sum.connecting += counts.connecting
            sum.idle += counts.idle
            sum.busy += counts.busy
            sum.inFlight += counts.inFlight
            sum.waiting += counts.waiting
        }
    }

    /// The key's connections by state, the exchanges running on them, and its waiters.
    func detailedCounts(_ key: Key) -> Counts {
        let host = hosts[key] ?? Host()
        let streams = host.multiplexed.entries
        let busyStreams = streams.filter { $0.inFlight > 0 }
        return Counts(
            connecting: host.connecting,
            idle: host.http1.idle.count + streams.count - busyStreams.count,
            busy: host.http1.busy.count + busyStreams.count,
            inFlight: host.http1.busy.count + streams.reduce(0) { $0 + $1.inFlight },
            waiting: host.waiters.count
        )
    }

    /// A slot freed up: the first waiter gets a new connection, unless the pool is still full. (After shutdown
    /// nobody waits.)
    private static func connectForFirstWaiter(_ host: inout Host, limit: Int) -> ReleaseAction {
        guard host.mayConnect(limit: limit), let waiter = host.waiters.popFirst() else {
            return .none
        }
        host.connecting += 1
        return .connect(for: waiter)
    }

    /// Runs `body` on `key`'s host in place (one hash lookup; the host's collections are never copied), creating
    /// it when `creating` is set, and forgets the key when nothing is left. `nil` when the key has no host and
    /// `creating` is not set.
    private mutating func withHost<Result>(
        _ key: Key,
        creating: Bool = false,
        _ body: (inout Host) -> Result
    ) -> Result? {
        Self.update(&hosts[key], creating: creating, body)
    }

    private static func update<Result>(
        _ slot: inout Host?,
        creating: Bool,
        _ body: (inout Host) -> Result
    ) -> Result? {
        if slot == nil {
            guard creating else { return nil }
            slot = Host()
        }
        let result = body(&slot!)
        if slot!.isEmpty { slot = nil }
        return result
    }
}

extension PoolStateMachine: Sendable where Key: Sendable, Connection: Sendable, Waiter: Sendable {}
extension PoolStateMachine.Host: Sendable where Key: Sendable, Connection: Sendable, Waiter: Sendable {}
