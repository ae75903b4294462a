import Foundation

/// A complete request received by a ``MockServer``.
public struct RecordedRequest: Sendable {
    /// The request method, e.g. `GET`.
    public var method: String
    /// The request-target as sent, e.g. `/a/b?x=1`, or `http://example.com/a/b?x=1` from a client that takes the
    /// server for its HTTP proxy.
    public var target: String
    /// ``target``'s path, without the query (for an absolute-form target, the path after its authority, `/` when
    /// there is none).
    public var path: String
    /// The query (the part of ``target`` after the first `?`), or `nil` when there is none.
    public var query: String?
    /// The protocol version, e.g. `HTTP/1.1`, or `HTTP/2.0` for a request that came over HTTP/2.
    public var version: String
    /// The protocol by its ALPN name: `h2` for HTTP/2, else `http/1.1` (or `http/1.0`).
    public var protocolName: String = "http/1.1"
    /// The HTTP/2 stream the request came on; `nil` on HTTP/1.
    public var streamID: Int? = nil
    /// The header fields in order, as received. Over HTTP/2 the names are lowercase, pseudo-header fields are left
    /// out, and a `host` field carrying `:authority` comes first when the client sent no `host` field.
    public var headers: [(name: String, value: String)]
    /// The first 16 MiB of the body.
    public var body: Data
    /// The full body length in bytes.
    public var bodyLength: Int
    /// The lowercase hex SHA-256 digest of the full body.
    public var bodySHA256: String
    /// The 1-based id of the TCP connection the request came on (shared by all the streams of an HTTP/2 connection).
    public var connectionID: Int
    /// The DER certificate the client presented in the TLS handshake, or `nil` (plain HTTP, or no certificate).
    public var clientCertificateDER: [UInt8]? = nil
    /// When the server had the whole request (its last byte), before it answered.
    public var receivedAt = Date()
    /// The client's port on the connection the request came on.
    public var clientPort: Int? = nil

    /// The value of the first header called `name`, compared case-insensitively.
    public func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    /// The values of all headers called `name`, compared case-insensitively, in order.
    public func headers(_ name: String) -> [String] {
        headers.filter { $0.name.caseInsensitiveCompare(name) == .orderedSame }.map(\.value)
    }
}
