import NIOCore

/// The status line and header fields of a response, with what the transport knows about the connection.
public struct TransportResponseHead: Sendable {
    /// The status code.
    public var status: Int
    /// The reason phrase as sent.
    public var reason: String
    /// `HTTP/1.1` or `HTTP/1.0`.
    public var version: String
    /// The header fields in the order received (repeated names kept).
    public var headers: [(String, String)]
    /// Facts about the connection the response came on.
    public var connection: ConnectionInfo

    /// Creates a head (the transport makes them; other sources and tests may too).
    public init(status: Int, reason: String, version: String, headers: [(String, String)], connection: ConnectionInfo) {
        self.status = status
        self.reason = reason
        self.version = version
        self.headers = headers
        self.connection = connection
    }
}

/// Facts about a connection, for metrics.
///
/// The connection's addresses are not here: metrics read them from the exchange's ``TransportTimeline``, which records
/// them once per connection, and only when something observes it (reading them from the channel for every response
/// took a lock and copied two addresses per request).
public struct ConnectionInfo: Sendable {
    /// Whether the connection had served an earlier request.
    public var isReused: Bool
    /// The negotiated protocol name, e.g. `http/1.1`.
    public var protocolName: String

    /// Creates connection facts.
    public init(isReused: Bool, protocolName: String) {
        self.isReused = isReused
        self.protocolName = protocolName
    }
}
