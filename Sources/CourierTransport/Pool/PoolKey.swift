import CourierHTTP

/// What makes two connections interchangeable: scheme, host, port and (for `https`) the TLS settings.
///
/// The pool looks a key up in its table twice per request (lease and release): the hash of all the fields is
/// computed once, when the key is made, and compared first, so that a lookup hashes one integer and compares the
/// fields only of a key that has the same hash.
struct PoolKey: Hashable, Sendable {
    let endpoint: Endpoint
    let tls: TLSSettings?
    /// Connections verified by one evaluator are never handed to requests of another.
    let trustEvaluator: ObjectIdentifier?
    /// A connection that presented one provider's certificate never serves another's requests.
    let clientCertificateProvider: ObjectIdentifier?
    /// Connections through a proxy are never handed to direct requests, nor to another proxy's.
    let proxy: ProxyServer?
    /// A request that takes its connection over never shares one: its key is its own.
    let upgrade: ObjectIdentifier?
    private let fieldsHash: Int

    init(request: TransportRequest) {
        endpoint = request.endpoint
        let isTLS = request.endpoint.scheme == .https
        tls = isTLS ? request.tls : nil
        trustEvaluator = isTLS ? request.trustEvaluator.map { ObjectIdentifier($0) } : nil
        clientCertificateProvider = isTLS ? request.clientCertificateProvider.map { ObjectIdentifier($0) } : nil
        proxy = request.proxy
        upgrade = request.upgrade.map { ObjectIdentifier($0) }
        var hasher = Hasher()
        hasher.combine(endpoint)
        hasher.combine(tls)
        hasher.combine(trustEvaluator)
        hasher.combine(clientCertificateProvider)
        hasher.combine(proxy)
        hasher.combine(upgrade)
        fieldsHash = hasher.finalize()
    }

    static func == (lhs: PoolKey, rhs: PoolKey) -> Bool {
        lhs.fieldsHash == rhs.fieldsHash && lhs.endpoint == rhs.endpoint && lhs.upgrade == rhs.upgrade
            && lhs.trustEvaluator == rhs.trustEvaluator
            && lhs.clientCertificateProvider == rhs.clientCertificateProvider
            && lhs.proxy == rhs.proxy && lhs.tls == rhs.tls
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(fieldsHash)
    }
}
