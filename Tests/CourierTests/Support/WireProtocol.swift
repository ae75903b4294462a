import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

/// The wire protocols the end-to-end suites run over: HTTP/1.1 in the clear, and HTTP/2 over TLS as ALPN
/// negotiates it. Everything above HTTP must behave the same on both.
enum WireProtocol: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case http1
    case h2

    /// The mock server's scheme for this protocol.
    var scheme: MockServer.Scheme {
        switch self {
        case .http1: .http
        case .h2: .http2
        }
    }

    /// The name `URLSessionTaskTransactionMetrics.networkProtocolName` reports.
    var networkProtocolName: String {
        switch self {
        case .http1: "http/1.1"
        case .h2: "h2"
        }
    }

    var testDescription: String { rawValue }
}

/// One certificate authority for every HTTP/2 test server, trusted by every session ``makeSession(delegate:queue:_:)``
/// makes: all those sessions share one TLS configuration, so the process builds one TLS context for them.
enum SharedTestTLS {
    /// The authority.
    static let authority: TestCertificateAuthority = {
        do {
            return try TestCertificateAuthority(commonName: "Courier shared test CA")
        } catch {
            fatalError("cannot make the shared test CA: \(error)")
        }
    }()

    /// The servers' identity, for 127.0.0.1 and localhost.
    static let serverIdentity: MockTLSIdentity = {
        do {
            return try authority.serverIdentity()
        } catch {
            fatalError("cannot make the shared test server identity: \(error)")
        }
    }()

    /// The authority's certificate, as sessions trust it.
    static let authorityDER: Data = authority.certificate.derData
}

/// Starts a mock server speaking `wire` for the duration of `body`.
func withServer<T>(
    _ wire: WireProtocol,
    host: String = "127.0.0.1",
    _ body: (MockServer) async throws -> T
) async throws -> T {
    try await withServer(wire.scheme, host: host, tlsIdentity: wire == .h2 ? SharedTestTLS.serverIdentity : nil, body)
}
