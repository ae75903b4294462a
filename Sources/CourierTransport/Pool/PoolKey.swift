/// What makes two connections interchangeable: scheme, host, port and (for `https`) the TLS settings.
struct PoolKey: Hashable, Sendable {
    var endpoint: Endpoint
    var tls: TLSSettings?

    init(request: TransportRequest) {
        endpoint = request.endpoint
        tls = request.endpoint.scheme == .https ? request.tls : nil
    }
}
