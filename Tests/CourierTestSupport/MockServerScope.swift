import CourierMockServer

/// Starts a mock server for the duration of `body`.
public func withServer<T>(
    _ scheme: MockServer.Scheme = .http,
    host: String = "127.0.0.1",
    tlsIdentity: MockTLSIdentity? = nil,
    _ body: (MockServer) async throws -> T
) async throws -> T {
    let server = MockServer(scheme: scheme, host: host, tlsIdentity: tlsIdentity)
    try await server.start()
    do {
        let result = try await body(server)
        try await server.shutdown()
        return result
    } catch {
        try? await server.shutdown()
        throw error
    }
}
