import Foundation
import NIOCore
import NIOSSL
import Testing

@testable import CourierMockServer

@Suite struct TLSAndAddressTests {
    @Test func httpsHandshakeTrustsTheGeneratedCertificate() async throws {
        let server = MockServer(scheme: .https)
        server.route("/secure", response: .ok("secret"))
        try await withServer(server) { server in
            #expect(server.certificatePEM.hasPrefix("-----BEGIN CERTIFICATE-----"))
            #expect(!server.certificateDER.isEmpty)
            #expect(
                try NIOSSLCertificate(bytes: server.certificateDER, format: .der).toDERBytes() == server.certificateDER)
            #expect(server.baseURL.absoluteString == "https://127.0.0.1:\(server.port)")
            let tls = try clientTLSContext(trusting: server)
            // Verified against the IP address SAN, then against the DNS SAN.
            for hostname in [nil, "localhost"] as [String?] {
                try await TestConnection.with(port: server.port, tls: tls, serverHostname: hostname) { connection in
                    #expect(connection.negotiatedProtocol == "http/1.1")
                    try await connection.sendRequest("GET", "/secure")
                    let first = try await connection.readResponse()
                    #expect(first.text == "secret")
                    try await connection.sendRequest("GET", "/secure")
                    #expect(try await connection.readResponse().text == "secret")
                }
            }
            #expect(server.connectionCount == 2)
            #expect(server.requests.map(\.connectionID) == [1, 1, 2, 2])
        }
    }

    @Test func httpsRejectsAClientThatDoesNotTrustTheCertificate() async throws {
        try await withServer(MockServer(scheme: .https)) { server in
            let untrusting = try NIOSSLContext(configuration: .makeClientConfiguration())
            await #expect(throws: (any Error).self) {
                try await TestConnection.with(port: server.port, tls: untrusting) { _ in }
            }
            // Each server generates its own key and certificate: trusting another server's does not help.
            let other = MockServer(scheme: .https)
            try await other.start()
            let otherTLS = try clientTLSContext(trusting: other)
            try await other.shutdown()
            #expect(other.certificateDER != server.certificateDER)
            await #expect(throws: (any Error).self) {
                try await TestConnection.with(port: server.port, tls: otherTLS, serverHostname: "localhost") { _ in }
            }
            #expect(server.requests.isEmpty)
        }
    }

    @Test func shutdownIsQuickWhileATLSClientStopsReading() async throws {
        let server = MockServer(scheme: .https)
        server.route("/huge", response: MockResponse(body: .pattern(length: 100 * 1024 * 1024)))
        try await server.start()
        let port = server.port
        let tls = try clientTLSContext(trusting: server)
        try await withTimeout(.seconds(30)) {
            try await TestConnection.with(port: port, tls: tls) { connection in
                try await connection.sendRequest("GET", "/huge")
                let head = try await connection.readHead()
                #expect(head.header("Content-Length") == "\(100 * 1024 * 1024)")
                try await Task.sleep(for: .milliseconds(200))
                let elapsed = try await ContinuousClock().measure { try await server.shutdown() }
                // Far below the 30 s the body would take; room for a machine that stalls for seconds.
                #expect(elapsed < .seconds(10))
                #expect(server.openConnectionCount == 0)
            }
        }
    }

    @Test func httpsOnIPv6() async throws {
        try await withServer(MockServer(scheme: .https, host: "::1")) { server in
            #expect(server.baseURL.absoluteString == "https://[::1]:\(server.port)")
            let tls = try clientTLSContext(trusting: server)
            try await TestConnection.with(host: "::1", port: server.port, tls: tls) { connection in
                try await connection.sendRequest("GET", "/v6")
                #expect(try await connection.readResponse().status == 404)
            }
        }
    }

    @Test func servesOnIPv6Loopback() async throws {
        let server = MockServer(host: "::1")
        server.route("/six", response: .ok("v6"))
        try await withServer(server) { server in
            #expect(server.baseURL.absoluteString == "http://[::1]:\(server.port)")
            #expect(server.url("/six").absoluteString == "http://[::1]:\(server.port)/six")
            try await TestConnection.with(host: "::1", port: server.port) { connection in
                try await connection.sendRequest("GET", "/six")
                #expect(try await connection.readResponse().text == "v6")
            }
            // Whether 127.0.0.1 refuses this port is not checked: tests run in parallel, and another server may
            // hold the same port number on IPv4.
        }
    }

    @Test func localhostListensOnBothFamilies() async throws {
        try await withServer(MockServer(host: "localhost")) { server in
            #expect(server.baseURL.absoluteString == "http://localhost:\(server.port)")
            for host in ["127.0.0.1", "::1"] {
                try await TestConnection.with(host: host, port: server.port) { connection in
                    try await connection.sendRequest("GET", "/")
                    #expect(try await connection.readResponse().status == 404)
                }
            }
            #expect(server.connectionCount == 2)
        }
    }
}
