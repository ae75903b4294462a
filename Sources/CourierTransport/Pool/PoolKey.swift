import CourierHTTP

/// What makes two connections interchangeable: scheme, host, port and (for `https`) the TLS settings.
struct PoolKey: Hashable, Sendable {
    var endpoint: Endpoint
    var tls: TLSSettings?
    /// Connections verified by one evaluator are never handed to requests of another.
    var trustEvaluator: ObjectIdentifier?
    /// A connection that presented one provider's certificate never serves another's requests.
    var clientCertificateProvider: ObjectIdentifier?
    /// Connections through a proxy are never handed to direct requests, nor to another proxy's.
    var proxy: ProxyServer?
    /// A request that takes its connection over never shares one: its key is its own.
    var upgrade: ObjectIdentifier?

    init(request: TransportRequest) {
        endpoint = request.endpoint
        let isTLS = request.endpoint.scheme == .https
        tls = isTLS ? request.tls : nil
        trustEvaluator = isTLS ? request.trustEvaluator.map { ObjectIdentifier($0) } : nil
        clientCertificateProvider = isTLS ? request.clientCertificateProvider.map { ObjectIdentifier($0) } : nil
        proxy = request.proxy
        upgrade = request.upgrade.map { ObjectIdentifier($0) }
    }
}
