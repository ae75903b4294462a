import Foundation

/// What happened when during one exchange, and on which connection: recorded by the transport on the event loop
/// as plain values and handed to the consumer's observers (metrics, logging) when the exchange ends. Observation
/// only: nothing in the engine decides anything from it.
///
/// Times are wall-clock `Date`s, as `URLSessionTaskTransactionMetrics` reports them. Fields the transport cannot
/// know stay `nil`: name resolution happens inside the connect (happy eyeballs), so there are no separate DNS
/// times; a reused connection has no connect or TLS times. Header byte counts are those of the head as serialized
/// on the wire (status or request line, fields, the empty line); body bytes are counted before and after content
/// decoding.
public struct TransportTimeline: Sendable, Hashable, Codable {
    /// The exchange was created (the request reached the transport).
    public var fetchStart: Date
    /// The TCP connect began / completed (a new connection only).
    public var connectStart: Date?
    public var connectEnd: Date?
    /// The TLS handshake began / completed (a new HTTPS connection only).
    public var secureConnectionStart: Date?
    public var secureConnectionEnd: Date?
    /// The first byte of the request was written / the last one.
    public var requestStart: Date?
    public var requestEnd: Date?
    /// The response head arrived / the last byte of the response.
    public var responseStart: Date?
    public var responseEnd: Date?
    /// The connection's addresses.
    public var localAddress: String?
    public var localPort: Int?
    public var remoteAddress: String?
    public var remotePort: Int?
    /// The protocol spoken, e.g. `http/1.1`.
    public var protocolName: String?
    /// Whether the connection had served an earlier request.
    public var isReusedConnection = false
    /// Whether the exchange went through a proxy (the addresses are then the proxy's).
    public var isProxyConnection = false
    /// The negotiated TLS version, e.g. `TLSv1.3` (HTTPS only).
    public var tlsProtocolVersion: String?
    /// Bytes of the request head written (request line, header fields, the empty line).
    public var requestHeaderBytesSent: Int64 = 0
    /// Bytes of the final response head received (informational heads not counted).
    public var responseHeaderBytesReceived: Int64 = 0
    /// Body bytes written.
    public var requestBodyBytesSent: Int64 = 0
    /// Body bytes received as sent (before content decoding) / after decoding.
    public var responseBodyBytesReceived: Int64 = 0
    public var responseBodyBytesDecoded: Int64 = 0

    /// A timeline whose exchange starts now.
    public init(fetchStart: Date = Date()) {
        self.fetchStart = fetchStart
    }
}

/// How a connection was set up: copied into the timeline of the first exchange it runs.
struct ConnectionEstablishment: Sendable, Hashable {
    var connectStart: Date?
    var connectEnd: Date?
    var secureConnectionStart: Date?
    var secureConnectionEnd: Date?
    var tlsProtocolVersion: String?
}
