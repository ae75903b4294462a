import CourierHTTP
import Foundation
import NIOCore

/// One HTTP request as the transport sends it: the task engine has already applied every stage above.
///
/// A value type whose fields live in one shared box, copied only when a copy is changed: a request is handed from
/// the engine to the source, the exchange and the connection's handler, and copying its fields (each with its
/// references) at every hand-over cost every request more than the box does. The connection-level settings — TLS,
/// trust, proxy, decompression limit — are the same for most requests of a session and live in a second box,
/// ``ConnectionOptions``, which every request made with the same options shares: a queued request carries its own
/// method, URL, fields and body, and a reference to the rest.
public struct TransportRequest: Sendable {
    /// The per-request fields, as a plain value: the box below holds one, and a copy of the box copies it whole.
    private struct Fields: Sendable {
        var method: String
        var url: URL
        var endpoint: Endpoint
        var target: String
        var headers: [(String, String)]
        var body: TransportRequestBody
        var idleTimeout: TimeAmount
        var options: ConnectionOptions
        var observesTimeline = true
    }

    /// The fields, shared between copies until one of them changes.
    private var storage: CopyOnWriteBox<Fields>

    private mutating func update(_ change: (inout Fields) -> Void) {
        storage.update(change)
    }

    /// The method, e.g. `GET`.
    public var method: String {
        get { storage.value.method }
        set { update { $0.method = newValue } }
    }
    /// The absolute URL; only `http` and `https` reach the transport.
    public var url: URL {
        get { storage.value.url }
        set { update { $0.url = newValue } }
    }
    /// Where to connect.
    public var endpoint: Endpoint {
        get { storage.value.endpoint }
        set { update { $0.endpoint = newValue } }
    }
    /// The request-target written on the request line (`/path?query`).
    public var target: String {
        get { storage.value.target }
        set { update { $0.target = newValue } }
    }
    /// Header fields in the order they are written. `Host` is added by the transport when absent.
    public var headers: [(String, String)] {
        get { storage.value.headers }
        set { update { $0.headers = newValue } }
    }
    /// The request body.
    public var body: TransportRequestBody {
        get { storage.value.body }
        set { update { $0.body = newValue } }
    }
    /// How long the connection may stay silent (no byte sent or received) before the request times out.
    public var idleTimeout: TimeAmount {
        get { storage.value.idleTimeout }
        set { update { $0.idleTimeout = newValue } }
    }
    /// Whether anyone reads the exchange's ``TransportTimeline`` (task metrics, telemetry, debug logs). When not, the
    /// connection records none: no clock readings, byte counts or addresses, and no copies of its 300 bytes.
    public var observesTimeline: Bool {
        get { storage.value.observesTimeline }
        set { update { $0.observesTimeline = newValue } }
    }
    /// The connection-level settings below, as one shareable value.
    public var options: ConnectionOptions {
        get { storage.value.options }
        set { update { $0.options = newValue } }
    }
    /// TLS settings for `https`.
    public var tls: TLSSettings {
        get { options.tls }
        set { update { $0.options.tls = newValue } }
    }
    /// Replaces the built-in certificate verification when set (see ``ServerTrustEvaluator``).
    public var trustEvaluator: (any ServerTrustEvaluator)? {
        get { options.trustEvaluator }
        set { update { $0.options.trustEvaluator = newValue } }
    }
    /// Chooses the certificate to present when a server asks for one (see ``ClientCertificateProvider``); when
    /// `nil`, ``TLSSettings/clientIdentity`` is presented, if any.
    public var clientCertificateProvider: (any ClientCertificateProvider)? {
        get { options.clientCertificateProvider }
        set { update { $0.options.clientCertificateProvider = newValue } }
    }
    /// A gzip, deflate or brotli body may decode to at most this many times the compressed bytes received; more fails
    /// the request with `cannotDecodeContentData`. `nil` means no limit. The default is
    /// `ContentCoding.defaultMaximumDecompressionRatio`, which real content stays far under.
    public var maximumDecompressionRatio: Int? {
        get { options.maximumDecompressionRatio }
        set { update { $0.options.maximumDecompressionRatio = newValue } }
    }
    /// The HTTP proxy the request goes through, if any: an `http` request is sent to it in absolute form (set
    /// ``target`` to the absolute URL), an `https` one, or one with an ``upgrade`` slot, through a `CONNECT` tunnel to
    /// the origin. SOCKS proxies are not spoken by this transport.
    public var proxy: ProxyServer? {
        get { options.proxy }
        set { update { $0.options.proxy = newValue } }
    }
    /// The `Proxy-Authorization` value for a `CONNECT` tunnel (never sent inside it, to the origin).
    public var tunnelAuthorization: String? {
        get { options.tunnelAuthorization }
        set { update { $0.options.tunnelAuthorization = newValue } }
    }
    /// Wait for connectivity instead of failing when no network path leads to the host (`waitsForConnectivity`):
    /// the consumer hears ``TransportResponseConsumer/transportIsWaitingForConnectivity()`` once and the connection
    /// is retried with backoff until it succeeds or the engine cancels the exchange (the resource timeout).
    public var waitsForConnectivity: Bool {
        get { options.waitsForConnectivity }
        set { update { $0.options.waitsForConnectivity = newValue } }
    }
    /// Set for a request that takes its connection over on `101 Switching Protocols` (a WebSocket handshake): it
    /// gets a connection of its own, and the switched connection is left in this slot.
    public var upgrade: ConnectionUpgrade? {
        get { options.upgrade }
        set { update { $0.options.upgrade = newValue } }
    }

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
        try self.init(
            method: method, url: url, headers: headers, body: body, idleTimeout: idleTimeout,
            options: ConnectionOptions(tls: tls, trustEvaluator: trustEvaluator))
    }

    /// Creates a request with connection-level settings that other requests may share (a session makes its
    /// ``ConnectionOptions`` once); fails with `badURL` / `unsupportedURL` for URLs the transport cannot reach.
    public init(
        method: String,
        url: URL,
        headers: [(String, String)],
        body: TransportRequestBody,
        idleTimeout: TimeAmount,
        options: ConnectionOptions
    ) throws(TransferError) {
        storage = CopyOnWriteBox(
            Fields(
                method: method, url: url, endpoint: try Endpoint(url: url), target: Endpoint.requestTarget(of: url),
                headers: headers, body: body, idleTimeout: idleTimeout, options: options))
    }

    /// Whether the method is idempotent, so the request may be retried on a fresh connection when a reused one
    /// turns out to be closed.
    public var isIdempotent: Bool { MethodRules.isIdempotent(method) }

    /// The settings of a ``TransportRequest`` that concern its connection rather than the request itself. A value
    /// type in a shared box: requests made with one value share it until one of them changes a setting.
    public struct ConnectionOptions: Sendable {
        private struct Values: Sendable {
            var tls: TLSSettings
            var trustEvaluator: (any ServerTrustEvaluator)?
            var clientCertificateProvider: (any ClientCertificateProvider)? = nil
            var maximumDecompressionRatio: Int? = ContentCoding.defaultMaximumDecompressionRatio
            var proxy: ProxyServer? = nil
            var tunnelAuthorization: String? = nil
            var waitsForConnectivity = false
            var upgrade: ConnectionUpgrade? = nil
        }

        private var box: CopyOnWriteBox<Values>

        private mutating func update(_ change: (inout Values) -> Void) {
            box.update(change)
        }

        /// Options with the given TLS settings and trust evaluator, and the defaults for the rest.
        public init(
            tls: TLSSettings,
            trustEvaluator: (any ServerTrustEvaluator)? = nil,
            clientCertificateProvider: (any ClientCertificateProvider)? = nil,
            maximumDecompressionRatio: Int? = ContentCoding.defaultMaximumDecompressionRatio,
            waitsForConnectivity: Bool = false
        ) {
            box = CopyOnWriteBox(
                Values(
                    tls: tls, trustEvaluator: trustEvaluator, clientCertificateProvider: clientCertificateProvider,
                    maximumDecompressionRatio: maximumDecompressionRatio, waitsForConnectivity: waitsForConnectivity))
        }

        /// See ``TransportRequest/tls``.
        public var tls: TLSSettings {
            get { box.value.tls }
            set { update { $0.tls = newValue } }
        }
        /// See ``TransportRequest/trustEvaluator``.
        public var trustEvaluator: (any ServerTrustEvaluator)? {
            get { box.value.trustEvaluator }
            set { update { $0.trustEvaluator = newValue } }
        }
        /// See ``TransportRequest/clientCertificateProvider``.
        public var clientCertificateProvider: (any ClientCertificateProvider)? {
            get { box.value.clientCertificateProvider }
            set { update { $0.clientCertificateProvider = newValue } }
        }
        /// See ``TransportRequest/maximumDecompressionRatio``.
        public var maximumDecompressionRatio: Int? {
            get { box.value.maximumDecompressionRatio }
            set { update { $0.maximumDecompressionRatio = newValue } }
        }
        /// See ``TransportRequest/proxy``.
        public var proxy: ProxyServer? {
            get { box.value.proxy }
            set { update { $0.proxy = newValue } }
        }
        /// See ``TransportRequest/tunnelAuthorization``.
        public var tunnelAuthorization: String? {
            get { box.value.tunnelAuthorization }
            set { update { $0.tunnelAuthorization = newValue } }
        }
        /// See ``TransportRequest/waitsForConnectivity``.
        public var waitsForConnectivity: Bool {
            get { box.value.waitsForConnectivity }
            set { update { $0.waitsForConnectivity = newValue } }
        }
        /// See ``TransportRequest/upgrade``.
        public var upgrade: ConnectionUpgrade? {
            get { box.value.upgrade }
            set { update { $0.upgrade = newValue } }
        }
    }
}

/// The body of a ``TransportRequest``.
public enum TransportRequestBody: Sendable {
    /// No body.
    case none
    /// A body held in memory.
    case bytes(ByteBuffer)
    /// A body pulled from `source` as it is written: `length` bytes (sent with `Content-Length`), or, when
    /// `nil`, as many as the source gives (sent chunked).
    ///
    /// Indirect: a streamed body is rare next to none or bytes, and every queued request would otherwise carry room
    /// for its length and source.
    indirect case stream(length: Int64?, source: any TransportBodySource)

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
    /// The body will not be sent (the exchange was abandoned) while a read is running: a reader whose read may wait
    /// for long (an app's stream) ends it now if it can; `close()` follows when the read ended. The default does
    /// nothing.
    func interruptRead()
}

extension TransportBodyReader {
    public func interruptRead() {}
}
