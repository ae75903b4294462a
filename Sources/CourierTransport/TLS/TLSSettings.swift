import NIOSSL

/// The TLS options that distinguish one pool of connections from another.
public struct TLSSettings: Hashable, Sendable {
    /// Hashing the certificates' bytes on every pool lease costs more than the request: hash them once, and only
    /// their lengths and ends (see ``fingerprint(of:)``).
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
    /// What ALPN offers: `h2` then `http/1.1` (as Darwin does), `http/1.1` alone (a connection that will be taken
    /// over after `101`), or nothing (stream tasks' connections, which carry no HTTP).
    public var applicationProtocols = ApplicationProtocolOffer.http2AndHTTP1

    /// The application protocols a TLS connection offers by ALPN.
    public enum ApplicationProtocolOffer: Hashable, Sendable {
        /// `h2`, then `http/1.1`.
        case http2AndHTTP1
        /// `http/1.1` only.
        case http1
        /// No ALPN extension.
        case none

        /// The ALPN identifiers, in order of preference.
        var names: [String] {
            switch self {
            case .http2AndHTTP1: return ["h2", "http/1.1"]
            case .http1: return ["http/1.1"]
            case .none: return []
            }
        }
    }

    /// Creates settings.
    public init(
        minimumVersion: TLSVersion = .tlsv12,
        maximumVersion: TLSVersion = .tlsv13,
        additionalTrustedCertificatesDER: [[UInt8]] = []
    ) {
        self.minimumVersion = minimumVersion
        self.maximumVersion = maximumVersion
        self.additionalTrustedCertificatesDER = additionalTrustedCertificatesDER
        self.certificatesHash = Self.fingerprint(of: additionalTrustedCertificatesDER)
    }

    /// A hash of the certificates read from their lengths and last 64 bytes (a DER certificate ends with its
    /// signature, which differs between any two certificates). Hashing every byte of a certificate cost each new
    /// session about as much as a request; equality still compares every byte, so two certificates that share an
    /// end only share a hash bucket.
    static func fingerprint(of certificates: [[UInt8]]) -> Int {
        var hasher = Hasher()
        hasher.combine(certificates.count)
        for certificate in certificates {
            hasher.combine(certificate.count)
            certificate.withUnsafeBytes { bytes in
                hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: bytes.suffix(64)))
            }
        }
        return hasher.finalize()
    }

    public static func == (lhs: TLSSettings, rhs: TLSSettings) -> Bool {
        lhs.minimumVersion == rhs.minimumVersion && lhs.maximumVersion == rhs.maximumVersion
            && lhs.certificatesHash == rhs.certificatesHash
            && lhs.additionalTrustedCertificatesDER == rhs.additionalTrustedCertificatesDER
            && lhs.clientIdentity == rhs.clientIdentity && lhs.applicationProtocols == rhs.applicationProtocols
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(minimumVersion)
        hasher.combine(maximumVersion)
        hasher.combine(certificatesHash)
        hasher.combine(applicationProtocols)
        // Hashing a certificate is costly and an identity is rare: equality tells identities apart.
        hasher.combine(clientIdentity != nil)
    }

    /// Builds the NIOSSL client configuration: the system trust store, full verification, ALPN as
    /// ``applicationProtocols`` says, and the client identity if there is one.
    ///
    /// - Parameter loadsTrustRoots: `false` for connections whose chain a ``ServerTrustEvaluator`` verifies:
    ///   loading the system's roots is the slow part of making a context, and they would never be consulted. The
    ///   evaluator decides on the host too (default handling checks it; a delegate that trusts the server has the
    ///   last word, as on Darwin), so NIOSSL's own host check is off for them: run after the evaluator, it refused
    ///   servers the delegate had trusted (a self-signed certificate for another name, a server reached by address).
    func makeClientConfiguration(loadsTrustRoots: Bool = true) throws -> TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = minimumVersion
        configuration.maximumTLSVersion = maximumVersion
        configuration.certificateVerification = loadsTrustRoots ? .fullVerification : .noHostnameVerification
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
        configuration.applicationProtocols = applicationProtocols.names
        return configuration
    }
}
