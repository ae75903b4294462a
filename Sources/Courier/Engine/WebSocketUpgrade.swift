import CourierHTTP
import CourierTransport

/// What a WebSocket task's handshake adds to its requests: RFC 6455's fields, an upgrade slot the transport fills
/// with the switched connection, and ALPN `http/1.1` only (a WebSocket over HTTP/2, RFC 8441, is not offered).
struct WebSocketUpgrade: Sendable {
    let handshake: WebSocketHandshake
    let slot: ConnectionUpgrade

    /// Adds the handshake to `request` (each attempt, redirects and authentication retries included).
    func apply(to request: inout TransportRequest) {
        let added = handshake.requestHeaders
        request.headers.removeAll { field in added.contains { HeaderName.equal($0.0, field.0) } }
        request.headers += added
        request.upgrade = slot
        request.tls.applicationProtocols = .http1
    }
}
