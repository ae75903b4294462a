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
}
