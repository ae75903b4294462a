import NIOSSL

/// The TLS options that distinguish one pool of connections from another.
public struct TLSSettings: Hashable, Sendable {
    /// Hashing the certificates' bytes on every pool lease costs more than the request: hash them once.
    private var certificatesHash: Int
    /// The lowest protocol version offered.
    public var minimumVersion: TLSVersion
    /// The highest protocol version offered.
    public var maximumVersion: TLSVersion
    /// DER certificates trusted in addition to the system's trust store (Courier's extension for tests and
    /// private CAs).
    public let additionalTrustedCertificatesDER: [[UInt8]]
    /// The certificate every connection presents when a server asks for one, for sessions that answer client
    /// certificate challenges from a credential storage rather than through a ``ClientCertificateProvider``.
    public var clientIdentity: ClientIdentity?
    /// Whether ALPN offers `h2` before `http/1.1` (as Darwin does). Off only for comparisons and for servers known to
    /// mishandle HTTP/2.
    public var offersHTTP2 = true
    /// Whether ALPN is offered at all. Off for stream tasks' connections, which carry no HTTP.
    public var offersApplicationProtocols = true

    /// Creates settings.
    public init(
        minimumVersion: TLSVersion = .tlsv12,
        maximumVersion: TLSVersion = .tlsv13,
        additionalTrustedCertificatesDER: [[UInt8]] = []
    ) {
        self.minimumVersion = minimumVersion
        self.maximumVersion = maximumVersion
        self.additionalTrustedCertificatesDER = additionalTrustedCertificatesDER
        self.certificatesHash = additionalTrustedCertificatesDER.hashValue
    }

    public static func == (lhs: TLSSettings, rhs: TLSSettings) -> Bool {
        lhs.minimumVersion == rhs.minimumVersion && lhs.maximumVersion == rhs.maximumVersion
            && lhs.certificatesHash == rhs.certificatesHash
            && lhs.additionalTrustedCertificatesDER == rhs.additionalTrustedCertificatesDER
            && lhs.clientIdentity == rhs.clientIdentity && lhs.offersHTTP2 == rhs.offersHTTP2
            && lhs.offersApplicationProtocols == rhs.offersApplicationProtocols
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(minimumVersion)
        hasher.combine(maximumVersion)
        hasher.combine(certificatesHash)
        hasher.combine(offersHTTP2)
        hasher.combine(offersApplicationProtocols)
        // Hashing a certificate is costly and an identity is rare: equality tells identities apart.
        hasher.combine(clientIdentity != nil)
    }

    /// Builds the NIOSSL client configuration: the system trust store, full verification, ALPN `h2` then
    /// `http/1.1` (unless ``offersApplicationProtocols`` is off), and the client identity if there is one.
    ///
    /// - Parameter loadsTrustRoots: `false` for connections whose chain a ``ServerTrustEvaluator`` verifies:
    ///   loading the system's roots is the slow part of making a context, and they would never be consulted.
    func makeClientConfiguration(loadsTrustRoots: Bool = true) throws -> TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = minimumVersion
        configuration.maximumTLSVersion = maximumVersion
        configuration.certificateVerification = .fullVerification
        configuration.trustRoots = loadsTrustRoots ? .default : .certificates([])
        if let clientIdentity {
            configuration.certificateChain = clientIdentity.certificateChain.map { .certificate($0) }
            configuration.privateKey = .privateKey(clientIdentity.privateKey)
        }
        if loadsTrustRoots && !additionalTrustedCertificatesDER.isEmpty {
            let certificates = try additionalTrustedCertificatesDER.map {
                try NIOSSLCertificate(bytes: $0, format: .der)
            }
            configuration.additionalTrustRoots = [.certificates(certificates)]
        }
        if offersApplicationProtocols {
            configuration.applicationProtocols = offersHTTP2 ? ["h2", "http/1.1"] : ["http/1.1"]
        }
        return configuration
    }
}
