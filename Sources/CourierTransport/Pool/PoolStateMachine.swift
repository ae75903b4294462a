import NIOCore

/// The bookkeeping of the HTTP/1.1 connection pool, without I/O.
///
/// For every key (scheme, host, port, TLS settings) it tracks idle connections, connections that are leased
/// or being opened, and the requests waiting for one. `maxConnectionsPerHost` bounds idle + busy. Each event
/// returns what the owner must do; the owner runs it under a lock and acts after unlocking.
struct PoolStateMachine<Key: Hashable, Connection: Hashable, Waiter: Hashable> {
    /// What to do with a request that asks for a connection.
    enum LeaseAction: Equatable {
        /// Run it on this idle connection (reused).
        case use(Connection)
        /// Open a new connection for it.
        case connect
        /// It waits in the queue for a connection.
        case wait
        /// The pool is shut down.
        case failShutdown
    }

    /// What to do after a connection finished a request or closed.
    enum ReleaseAction: Equatable {
        /// Hand this connection to the waiter.
        case hand(Connection, to: Waiter)
        /// Open a new connection for the waiter.
        case connect(for: Waiter)
        /// Nothing to do (the connection is parked idle, or nobody waits).
        case none
        /// Close the connection (the pool is shut down).
        case close(Connection)
    }

    fileprivate struct Host {
        var idle: [Connection] = []
        var busy = 0
        var waiters = CircularBuffer<Waiter>()
        var isEmpty: Bool { idle.isEmpty && busy == 0 && waiters.isEmpty }
    }

    private var hosts: [Key: Host] = [:]
    private(set) var isShutdown = false
    let maxConnectionsPerHost: Int

    init(maxConnectionsPerHost: Int) {
        self.maxConnectionsPerHost = max(1, maxConnectionsPerHost)
    }

    /// A request asks for a connection to `key`.
    mutating func lease(_ key: Key, for waiter: Waiter) -> LeaseAction {
        if isShutdown { return .failShutdown }
        var host = hosts[key, default: Host()]
        defer { hosts[key] = host }
        if let connection = host.idle.popLast() {
            host.busy += 1
            return .use(connection)
        }
        if host.busy < maxConnectionsPerHost {
            host.busy += 1
            return .connect
        }
        host.waiters.append(waiter)
        return .wait
    }

    /// A leased connection finished its request and can serve another.
    mutating func release(_ key: Key, _ connection: Connection) -> ReleaseAction {
        if isShutdown {
            // Still counted busy: its close will settle the count.
            return .close(connection)
        }
        guard var host = hosts[key] else { return .close(connection) }
        defer { store(key, host) }
        if let waiter = host.waiters.popFirst() {
            return .hand(connection, to: waiter)
        }
        host.busy -= 1
        host.idle.append(connection)
        return .none
    }

    /// A connection closed, or a connection attempt failed (`connection == nil`). A connection that is not
    /// parked idle was counted busy (leased, or opened and not yet used), whatever it was doing when it closed.
    mutating func closed(_ key: Key, _ connection: Connection?) -> ReleaseAction {
        guard var host = hosts[key] else { return .none }
        defer { store(key, host) }
        if let connection, let index = host.idle.firstIndex(of: connection) {
            host.idle.remove(at: index)
        } else {
            host.busy = max(0, host.busy - 1)
        }
        if !isShutdown, let waiter = host.waiters.first, host.busy + host.idle.count < maxConnectionsPerHost {
            host.waiters.removeFirst()
            host.busy += 1
            return .connect(for: waiter)
        }
        return .none
    }

    /// A waiting request was cancelled; `true` if it was still waiting.
    mutating func cancelWaiter(_ key: Key, _ waiter: Waiter) -> Bool {
        guard var host = hosts[key], let index = host.waiters.firstIndex(of: waiter) else { return false }
        host.waiters.remove(at: index)
        store(key, host)
        return true
    }

    /// Shuts the pool down: returns the idle connections to close and the waiters to fail.
    mutating func shutdown() -> (idle: [Connection], waiters: [Waiter]) {
        isShutdown = true
        var idle: [Connection] = []
        var waiters: [Waiter] = []
        for key in hosts.keys {
            idle += hosts[key]?.idle ?? []
            waiters += hosts[key]?.waiters ?? []
            hosts[key]?.idle = []
            hosts[key]?.waiters = []
        }
        return (idle, waiters)
    }

    /// Counts for tests and metrics.
    func counts(_ key: Key) -> (idle: Int, busy: Int, waiting: Int) {
        let host = hosts[key] ?? Host()
        return (host.idle.count, host.busy, host.waiters.count)
    }

    private mutating func store(_ key: Key, _ host: Host) {
        hosts[key] = host.isEmpty ? nil : host
    }
}

extension PoolStateMachine: Sendable where Key: Sendable, Connection: Sendable, Waiter: Sendable {}
extension PoolStateMachine.Host: Sendable where Key: Sendable, Connection: Sendable, Waiter: Sendable {}
