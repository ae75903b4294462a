/// The application protocol a pooled connection speaks, by its ALPN name ("http/1.1", "h2").
///
/// The pool learns it only when the connect (and the TLS handshake with ALPN) has finished; until then a
/// connection is `connecting` and its protocol unknown.
struct ApplicationProtocol: Hashable, Sendable, ExpressibleByStringLiteral {
    /// The ALPN identifier.
    let name: String

    /// HTTP/1.1: one exchange at a time per connection.
    static let http1: ApplicationProtocol = "http/1.1"

    /// Makes a protocol from its ALPN identifier.
    init(_ name: String) {
        self.name = name
    }

    /// Makes a protocol from its ALPN identifier, written as a literal.
    init(stringLiteral name: String) {
        self.init(name)
    }

    /// Whether one connection runs several exchanges at once, one per stream (HTTP/2, HTTP/3); HTTP/1.x does not.
    var isMultiplexed: Bool { !name.hasPrefix("http/1.") }
}

/// The HTTP/1 rules: a connection runs one exchange at a time (capacity 1). A connection whose exchange ended
/// waits idle, and the most recently used idle connection is leased first (LIFO: it is the least likely to have
/// been closed by the server meanwhile).
struct HTTP1Connections<Connection: Hashable> {
    /// Connections waiting for an exchange, the most recently used last.
    private(set) var idle: [Connection] = []
    /// Connections running an exchange.
    private(set) var busy: Set<Connection> = []

    /// How many connections are ready, idle or busy.
    var count: Int { idle.count + busy.count }

    /// Takes the most recently used idle connection for an exchange.
    mutating func leaseIdle() -> Connection? {
        guard let connection = idle.popLast() else { return nil }
        busy.insert(connection)
        return connection
    }

    /// A new connection that runs the exchange it was opened for.
    mutating func addBusy(_ connection: Connection) {
        busy.insert(connection)
    }

    /// Whether `connection` is one of these.
    func contains(_ connection: Connection) -> Bool {
        busy.contains(connection) || idle.contains(connection)
    }

    /// Whether `connection` runs an exchange.
    func isRunning(_ connection: Connection) -> Bool {
        busy.contains(connection)
    }

    /// The exchange on `connection` ended: it waits idle.
    mutating func park(_ connection: Connection) {
        guard busy.remove(connection) != nil else { return }
        idle.append(connection)
    }

    /// Forgets `connection`; `false` if it was not one of these.
    mutating func remove(_ connection: Connection) -> Bool {
        if busy.remove(connection) != nil { return true }
        guard let index = idle.firstIndex(of: connection) else { return false }
        idle.remove(at: index)
        return true
    }

    /// Forgets the idle connections and returns them (to close).
    mutating func takeIdle() -> [Connection] {
        defer { idle = [] }
        return idle
    }
}

/// The rules of a multiplexed protocol (HTTP/2, later HTTP/3): a connection runs up to its capacity of exchanges
/// at once, one per stream (for HTTP/2, the peer's SETTINGS_MAX_CONCURRENT_STREAMS). A new exchange goes to the
/// connection with the most free streams, the oldest on a tie.
struct MultiplexedConnections<Connection: Hashable> {
    /// One ready connection and its streams.
    struct Entry: Equatable {
        /// The connection.
        let connection: Connection
        /// The protocol it speaks.
        let applicationProtocol: ApplicationProtocol
        /// How many exchanges it may run at once.
        var capacity: Int
        /// How many it runs.
        var inFlight: Int
        /// How many more it may start.
        var free: Int { max(0, capacity - inFlight) }
    }

    /// The ready connections, oldest first (a key has at most `maxConnectionsPerHost`, so a list is enough).
    private(set) var entries: [Entry] = []

    /// How many connections are ready.
    var count: Int { entries.count }

    /// Adds a connection that opened with `capacity` streams, `inFlight` of them already taken.
    mutating func add(
        _ connection: Connection, applicationProtocol: ApplicationProtocol, capacity: Int, inFlight: Int
    ) {
        entries.append(
            Entry(
                connection: connection, applicationProtocol: applicationProtocol, capacity: capacity,
                inFlight: inFlight))
    }

    /// Takes a stream on the connection with the most free streams; `nil` when every connection is full.
    mutating func leaseStream() -> Connection? {
        var best: Int?
        for index in entries.indices where entries[index].free > 0 {
            if let current = best, entries[current].free >= entries[index].free { continue }
            best = index
        }
        guard let best else { return nil }
        entries[best].inFlight += 1
        return entries[best].connection
    }

    /// Takes a stream on `connection` if it has a free one.
    mutating func leaseStream(on connection: Connection) -> Bool {
        guard let index = entries.firstIndex(where: { $0.connection == connection }), entries[index].free > 0 else {
            return false
        }
        entries[index].inFlight += 1
        return true
    }

    /// Sets how many exchanges `connection` may run at once; `false` if it is not one of these. Streams already
    /// running above a lowered capacity finish; no new one starts until they do.
    mutating func setCapacity(_ capacity: Int, of connection: Connection) -> Bool {
        guard let index = entries.firstIndex(where: { $0.connection == connection }) else { return false }
        entries[index].capacity = capacity
        return true
    }

    /// Whether `connection` is one of these.
    func contains(_ connection: Connection) -> Bool {
        entries.contains { $0.connection == connection }
    }

    /// Whether `connection` runs at least one exchange.
    func isRunning(_ connection: Connection) -> Bool {
        entries.contains { $0.connection == connection && $0.inFlight > 0 }
    }

    /// One exchange on `connection` ended; returns the exchanges it still runs (`nil` if it is not one of these).
    mutating func endStream(_ connection: Connection) -> Int? {
        guard let index = entries.firstIndex(where: { $0.connection == connection }) else { return nil }
        entries[index].inFlight = max(0, entries[index].inFlight - 1)
        return entries[index].inFlight
    }

    /// Forgets `connection`; `false` if it was not one of these.
    mutating func remove(_ connection: Connection) -> Bool {
        guard let index = entries.firstIndex(where: { $0.connection == connection }) else { return false }
        entries.remove(at: index)
        return true
    }

    /// Forgets the connections that run nothing and returns them (to close).
    mutating func takeIdle() -> [Connection] {
        let idle = entries.filter { $0.inFlight == 0 }.map(\.connection)
        entries.removeAll { $0.inFlight == 0 }
        return idle
    }
}

extension HTTP1Connections: Sendable where Connection: Sendable {}
extension MultiplexedConnections: Sendable where Connection: Sendable {}
extension MultiplexedConnections.Entry: Sendable where Connection: Sendable {}
