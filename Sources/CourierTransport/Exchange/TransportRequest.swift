import CourierHTTP
import Foundation
import NIOCore

/// One HTTP request as the transport sends it: the task engine has already applied every stage above.
public struct TransportRequest: Sendable {
    /// The method, e.g. `GET`.
    public var method: String
    /// The absolute URL; only `http` and `https` reach the transport.
    public var url: URL
    /// Where to connect.
    public var endpoint: Endpoint
    /// The request-target written on the request line (`/path?query`).
    public var target: String
    /// Header fields in the order they are written. `Host` is added by the transport when absent.
    public var headers: [(String, String)]
    /// The request body.
    public var body: TransportRequestBody
    /// How long the connection may stay silent (no byte sent or received) before the request times out.
    public var idleTimeout: TimeAmount
    /// TLS settings for `https`.
    public var tls: TLSSettings
    /// Replaces the built-in certificate verification when set (see ``ServerTrustEvaluator``).
    public var trustEvaluator: (any ServerTrustEvaluator)?
    /// Chooses the certificate to present when a server asks for one (see ``ClientCertificateProvider``); when
    /// `nil`, ``TLSSettings/clientIdentity`` is presented, if any.
    public var clientCertificateProvider: (any ClientCertificateProvider)?
    /// A gzip, deflate or brotli body may decode to at most this many times the compressed bytes received; more fails
    /// the request with `cannotDecodeContentData`. `nil` means no limit. The default is
    /// `ContentCoding.defaultMaximumDecompressionRatio`, which real content stays far under.
    public var maximumDecompressionRatio: Int? = ContentCoding.defaultMaximumDecompressionRatio
    /// The HTTP proxy the request goes through, if any: an `http` request is sent to it in absolute form (set
    /// ``target`` to the absolute URL), an `https` one, or one with an ``upgrade`` slot, through a `CONNECT` tunnel to the origin. SOCKS proxies are
    /// not spoken by this transport.
    public var proxy: ProxyServer?
    /// The `Proxy-Authorization` value for a `CONNECT` tunnel (never sent inside it, to the origin).
    public var tunnelAuthorization: String?
    /// Wait for connectivity instead of failing when no network path leads to the host (`waitsForConnectivity`):
    /// the consumer hears ``TransportResponseConsumer/transportIsWaitingForConnectivity()`` once and the connection
    /// is retried with backoff until it succeeds or the engine cancels the exchange (the resource timeout).
    public var waitsForConnectivity = false
    /// Set for a request that takes its connection over on `101 Switching Protocols` (a WebSocket handshake): it
    /// gets a connection of its own, and the switched connection is left in this slot.
    public var upgrade: ConnectionUpgrade?

    /// Creates a request; fails with `badURL` / `unsupportedURL` for URLs the transport cannot reach.
    public init(
        method: String,
        url: URL,
        headers: [(String, String)],
        body: TransportRequestBody,
        idleTimeout: TimeAmount,
        tls: TLSSettings,
        trustEvaluator: (any ServerTrustEvaluator)? = nil
    ) throws(TransferError) {
        self.method = method
        self.url = url
        self.endpoint = try Endpoint(url: url)
        self.target = Endpoint.requestTarget(of: url)
        self.headers = headers
        self.body = body
        self.idleTimeout = idleTimeout
        self.tls = tls
        self.trustEvaluator = trustEvaluator
    }

    /// Whether the method is idempotent, so the request may be retried on a fresh connection when a reused one
    /// turns out to be closed.
    public var isIdempotent: Bool { MethodRules.isIdempotent(method) }
}

/// The body of a ``TransportRequest``.
public enum TransportRequestBody: Sendable {
    /// No body.
    case none
    /// A body held in memory.
    case bytes(ByteBuffer)
    /// A body pulled from `source` as it is written: `length` bytes (sent with `Content-Length`), or, when
    /// `nil`, as many as the source gives (sent chunked).
    case stream(length: Int64?, source: any TransportBodySource)

    /// The number of bytes, when known.
    public var length: Int64? {
        switch self {
        case .none: return 0
        case .bytes(let buffer): return Int64(buffer.readableBytes)
        case .stream(let length, _): return length
        }
    }
}

/// Where a streamed request body comes from. The transport asks for a fresh reader each time it sends the
/// body (a retry on a new connection sends it again from the start).
public protocol TransportBodySource: Sendable {
    /// A reader positioned at the start of the body.
    func makeReader() async throws -> any TransportBodyReader
}

/// Reads a request body in chunks. Reads never run on an event loop.
public protocol TransportBodyReader: Sendable {
    /// Up to `maxLength` bytes, or `nil` at the end of the body.
    func read(maxLength: Int) async throws -> ByteBuffer?
    /// Releases the underlying file or stream. Called exactly once.
    func close()
}
