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
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(minimumVersion)
        hasher.combine(maximumVersion)
        hasher.combine(certificatesHash)
    }

    /// Builds the NIOSSL client configuration: the system trust store, full verification, ALPN `http/1.1`.
    func makeClientConfiguration() throws -> TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = minimumVersion
        configuration.maximumTLSVersion = maximumVersion
        configuration.certificateVerification = .fullVerification
        configuration.trustRoots = .default
        if !additionalTrustedCertificatesDER.isEmpty {
            let certificates = try additionalTrustedCertificatesDER.map {
                try NIOSSLCertificate(bytes: $0, format: .der)
            }
            configuration.additionalTrustRoots = [.certificates(certificates)]
        }
        configuration.applicationProtocols = ["http/1.1"]
        return configuration
    }
}
