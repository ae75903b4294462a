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
public struct ConnectionInfo: Sendable {
    /// Whether the connection had served an earlier request.
    public var isReused: Bool
    /// The local socket address.
    public var localAddress: SocketAddress?
    /// The peer's socket address.
    public var remoteAddress: SocketAddress?
    /// The negotiated protocol name, e.g. `http/1.1`.
    public var protocolName: String

    /// Creates connection facts.
    public init(
        isReused: Bool,
        localAddress: SocketAddress? = nil,
        remoteAddress: SocketAddress? = nil,
        protocolName: String
    ) {
        self.isReused = isReused
        self.localAddress = localAddress
        self.remoteAddress = remoteAddress
        self.protocolName = protocolName
    }
}
