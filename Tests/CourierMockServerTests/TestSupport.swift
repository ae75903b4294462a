import Crypto
import Foundation
import NIOSSL

@testable import CourierMockServer

/// Runs `body` against a started server and always shuts the server down.
@discardableResult
func withServer<Result: Sendable>(
    _ server: MockServer = MockServer(),
    timeout: Duration = .seconds(60),
    _ body: @escaping @Sendable (MockServer) async throws -> Result
) async throws -> Result {
    try await server.start()
    do {
        let result = try await withTimeout(timeout) { try await body(server) }
        try await server.shutdown()
        return result
    } catch {
        try? await server.shutdown()
        throw error
    }
}

/// Runs `body`, failing with ``TestClientError/timedOut`` if it takes longer than `timeout`.
func withTimeout<Result: Sendable>(
    _ timeout: Duration,
    _ body: @escaping @Sendable () async throws -> Result
) async throws -> Result {
    try await withThrowingTaskGroup(of: Result.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: timeout)
            throw TestClientError.timedOut
        }
        defer { group.cancelAll() }
        guard let result = try await group.next() else { throw TestClientError.timedOut }
        return result
    }
}

/// Polls `condition` until it holds or `timeout` passes; returns whether it held.
func eventually(timeout: Duration = .seconds(15), _ condition: @Sendable () -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try await Task.sleep(for: .milliseconds(10))
    }
    return condition()
}

/// The lowercase hex SHA-256 digest of `bytes`.
func sha256Hex<Bytes: DataProtocol>(_ bytes: Bytes) -> String {
    SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
}

/// A TLS client context that trusts exactly the server's generated certificate and offers `applicationProtocols` by
/// ALPN.
func clientTLSContext(trusting server: MockServer, applicationProtocols: [String] = ["http/1.1"]) throws
    -> NIOSSLContext
{
    var configuration = TLSConfiguration.makeClientConfiguration()
    configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(server.certificatePEM.utf8)))
    configuration.applicationProtocols = applicationProtocols
    configuration.shutdownTimeout = .milliseconds(250)
    return try NIOSSLContext(configuration: configuration)
}
