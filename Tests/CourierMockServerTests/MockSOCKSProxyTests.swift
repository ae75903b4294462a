import CourierTestSupport
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

@testable import CourierMockServer

@Suite struct MockSOCKSProxyTests {
    // MARK: CONNECT

    @Test(arguments: [false, true])
    func noAuthConnectCarriesHTTPByteExact(byteByByte: Bool) async throws {
        let origin = MockServer()
        let raw = "HTTP/1.1 201 Created\r\nX-Odd:  spaced \r\nContent-Length: 5\r\n\r\nhello"
        origin.route("/t", response: .raw(raw))
        try await withSOCKSProxy(origin: origin) { proxy, origin in
            try await TestConnection.with(port: proxy.port) { connection in
                // Greeting, request and the tunnelled request in one go: the proxy must answer each in turn and
                // pass the HTTP bytes on, not drop them.
                let bytes =
                    [0x05, 0x01, 0x00]
                    + SOCKSBytes.request(addressType: 0x01, address: [127, 0, 0, 1], port: origin.port)
                    + Array("GET /t?q=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)
                if byteByByte {
                    // A pause after each byte, so that the proxy reads them one at a time rather than coalesced.
                    for byte in bytes {
                        try await connection.send([byte])
                        try await Task.sleep(for: .milliseconds(1))
                    }
                } else {
                    try await connection.send(bytes)
                }
                let received = try await connection.readToEnd()
                try #require(received.count == 2 + 10 + raw.utf8.count)
                #expect(Array(received[0..<2]) == [0x05, 0x00])
                #expect(Array(received[2..<10]) == [0x05, 0x00, 0x00, 0x01, 127, 0, 0, 1])
                // The bound port is the proxy's end of its connection to the origin, an ephemeral port.
                #expect(Int(received[10]) << 8 | Int(received[11]) != 0)
                #expect(String(decoding: received[12...], as: UTF8.self) == raw)
            }
            #expect(origin.requests.map(\.target) == ["/t?q=1"])
            let recorded = try #require(proxy.requests.first)
            #expect(proxy.requests.count == 1)
            #expect(recorded.target == "127.0.0.1:\(origin.port)")
            #expect(recorded.addressType == "ipv4")
            #expect(recorded.user == nil)
            #expect(recorded.reply == 0x00)
        }
    }

    @Test func domainLocalhostTarget() async throws {
        let origin = MockServer()
        origin.route("/name", response: .ok("by name"))
        try await withSOCKSProxy(origin: origin) { proxy, origin in
            try await TestConnection.with(port: proxy.port) { connection in
                try await connection.send([0x05, 0x02, 0x02, 0x00])
                #expect(try await connection.readBytes(2) == [0x05, 0x00])
                try await connection.send(
                    SOCKSBytes.request(addressType: 0x03, address: SOCKSBytes.domain("localhost"), port: origin.port))
                #expect(Array(try await connection.readBytes(10)[0..<4]) == [0x05, 0x00, 0x00, 0x01])
                try await connection.sendRequest("GET", "/name")
                #expect(try await connection.readResponse().text == "by name")
            }
            #expect(origin.requests.map(\.path) == ["/name"])
            #expect(proxy.requests.map(\.target) == ["localhost:\(origin.port)"])
            #expect(proxy.requests.map(\.addressType) == ["domain"])
            #expect(proxy.requests.map(\.reply) == [0x00])
        }
    }

    @Test(.enabled(if: isIPv6LoopbackAvailable, "::1 is not configured on this machine"))
    func ipv6LoopbackTarget() async throws {
        let origin = MockServer(host: "::1")
        origin.route("/six", response: .ok("over v6"))
        try await withSOCKSProxy(origin: origin) { proxy, origin in
            try await TestConnection.with(port: proxy.port) { connection in
                let loopback: [UInt8] = Array(repeating: 0, count: 15) + [1]
                try await connection.send(
                    [0x05, 0x01, 0x00] + SOCKSBytes.request(addressType: 0x04, address: loopback, port: origin.port))
                #expect(try await connection.readBytes(2) == [0x05, 0x00])
                // The proxy's end of the upstream connection is IPv6, which the IPv4-only reply leaves unspecified.
                #expect(try await connection.readBytes(10) == [0x05, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0])
                try await connection.sendRequest("GET", "/six")
                #expect(try await connection.readResponse().text == "over v6")
            }
            #expect(proxy.requests.map(\.target) == ["[::1]:\(origin.port)"])
            #expect(proxy.requests.map(\.addressType) == ["ipv6"])
        }
    }

    @Test func closedLoopbackPortIsRefused() async throws {
        try await withSOCKSProxy { proxy, _ in
            let refusing = try RefusingPort()
            let port = refusing.port
            try await TestConnection.with(port: proxy.port) { connection in
                try await connection.send(
                    [0x05, 0x01, 0x00] + SOCKSBytes.request(addressType: 0x01, address: [127, 0, 0, 1], port: port))
                #expect(try await connection.readToEnd() == [0x05, 0x00] + SOCKSBytes.failure(0x05))
            }
            #expect(proxy.requests.map(\.reply) == [0x05])
            #expect(proxy.requests.map(\.target) == ["127.0.0.1:\(port)"])
            withExtendedLifetime(refusing) {}
        }
    }

    @Test func nonLoopbackTargetsAreNotAllowedAndNotDialled() async throws {
        // A listener on 127.0.0.2 (loopback, but not an address the proxy accepts) would see any attempt the
        // proxy made to reach it; the other targets cannot be observed, but an attempt would not answer 0x02 at
        // once (10.0.0.1 would time out, example.com would need a name lookup).
        let attempts = NIOLockedValueBox(0)
        let watcher = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                attempts.withLockedValue { $0 += 1 }
                return channel.eventLoop.makeSucceededVoidFuture()
            }
            .bind(host: "127.0.0.2", port: 0).get()
        let port = try #require(watcher.localAddress?.port)
        defer { watcher.close(promise: nil) }
        try await withSOCKSProxy { proxy, _ in
            let targets: [(type: UInt8, address: [UInt8])] = [
                (0x01, [127, 0, 0, 2]), (0x01, [10, 0, 0, 1]), (0x03, SOCKSBytes.domain("example.com")),
                (0x04, [0x20, 0x01, 0x0D, 0xB8] + Array(repeating: 0, count: 11) + [1]),
                (0x03, SOCKSBytes.domain("127.0.0.2")),
            ]
            for target in targets {
                try await TestConnection.with(port: proxy.port) { connection in
                    try await connection.send(
                        [0x05, 0x01, 0x00]
                            + SOCKSBytes.request(addressType: target.type, address: target.address, port: port))
                    #expect(try await connection.readToEnd() == [0x05, 0x00] + SOCKSBytes.failure(0x02))
                }
            }
            #expect(proxy.requests.map(\.reply) == [0x02, 0x02, 0x02, 0x02, 0x02])
            #expect(
                proxy.requests.map(\.target) == [
                    "127.0.0.2:\(port)", "10.0.0.1:\(port)", "example.com:\(port)", "[2001:db8::1]:\(port)",
                    "127.0.0.2:\(port)",
                ])
            #expect(proxy.requests.map(\.addressType) == ["ipv4", "ipv4", "domain", "ipv6", "domain"])
        }
        try await Task.sleep(for: .milliseconds(100))
        #expect(attempts.withLockedValue { $0 } == 0)
    }

    @Test func otherCommandsAreNotSupported() async throws {
        let attempts = NIOLockedValueBox(0)
        let watcher = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                attempts.withLockedValue { $0 += 1 }
                return channel.eventLoop.makeSucceededVoidFuture()
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let port = try #require(watcher.localAddress?.port)
        defer { watcher.close(promise: nil) }
        try await withSOCKSProxy { proxy, _ in
            // BIND (2) and UDP ASSOCIATE (3), to a loopback address that would accept a connection.
            for command: UInt8 in [0x02, 0x03] {
                try await TestConnection.with(port: proxy.port) { connection in
                    try await connection.send(
                        [0x05, 0x01, 0x00]
                            + SOCKSBytes.request(
                                command: command, addressType: 0x01, address: [127, 0, 0, 1], port: port))
                    #expect(try await connection.readToEnd() == [0x05, 0x00] + SOCKSBytes.failure(0x07))
                }
            }
            #expect(proxy.requests.map(\.reply) == [0x07, 0x07])
            #expect(proxy.requests.map(\.target) == ["127.0.0.1:\(port)", "127.0.0.1:\(port)"])
        }
        try await Task.sleep(for: .milliseconds(100))
        #expect(attempts.withLockedValue { $0 } == 0)
    }

    @Test func unknownAddressTypeIsNotSupported() async throws {
        try await withSOCKSProxy { proxy, _ in
            try await TestConnection.with(port: proxy.port) { connection in
                try await connection.send([0x05, 0x01, 0x00, 0x05, 0x01, 0x00, 0x05, 1, 2, 3, 4])
                #expect(try await connection.readToEnd() == [0x05, 0x00] + SOCKSBytes.failure(0x08))
            }
            #expect(proxy.requests.map(\.reply) == [0x08])
            #expect(proxy.requests.map(\.addressType) == ["0x05"])
        }
    }

    // MARK: Authentication

    @Test func usernameAndPassword() async throws {
        let proxy = MockSOCKSProxy(requiredCredentials: (user: "alice", password: "s3cret"))
        let origin = MockServer()
        origin.route("/auth", response: .ok("authenticated"))
        try await withSOCKSProxy(proxy, origin: origin) { proxy, origin in
            try await TestConnection.with(port: proxy.port) { connection in
                // Offered both; a credentialed proxy must pick username/password.
                try await connection.send([0x05, 0x02, 0x00, 0x02])
                #expect(try await connection.readBytes(2) == [0x05, 0x02])
                try await connection.send(SOCKSBytes.credentials(user: "alice", password: "s3cret"))
                #expect(try await connection.readBytes(2) == [0x01, 0x00])
                try await connection.send(
                    SOCKSBytes.request(addressType: 0x01, address: [127, 0, 0, 1], port: origin.port))
                #expect(Array(try await connection.readBytes(10)[0..<2]) == [0x05, 0x00])
                try await connection.sendRequest("GET", "/auth")
                #expect(try await connection.readResponse().text == "authenticated")
            }
            #expect(proxy.requests.map(\.user) == ["alice"])
            #expect(proxy.requests.map(\.reply) == [0x00])
        }
    }

    @Test func wrongCredentialsAreRejected() async throws {
        let proxy = MockSOCKSProxy(requiredCredentials: (user: "alice", password: "s3cret"))
        try await withSOCKSProxy(proxy) { proxy, origin in
            for (user, password) in [("alice", "s3cre"), ("alice", "s3cret!"), ("bob", "s3cret"), ("", "")] {
                try await TestConnection.with(port: proxy.port) { connection in
                    // The request follows at once: it must not be acted on.
                    try await connection.send(
                        [0x05, 0x01, 0x02] + SOCKSBytes.credentials(user: user, password: password)
                            + SOCKSBytes.request(addressType: 0x01, address: [127, 0, 0, 1], port: origin.port))
                    #expect(try await connection.readToEnd() == [0x05, 0x02, 0x01, 0x01], "\(user):\(password)")
                }
            }
            #expect(proxy.requests.isEmpty)
            #expect(origin.requests.isEmpty)
        }
    }

    @Test func noAcceptableMethod() async throws {
        let credentialed = MockSOCKSProxy(requiredCredentials: (user: "u", password: "p"))
        try await withSOCKSProxy(credentialed) { proxy, _ in
            try await TestConnection.with(port: proxy.port) { connection in
                try await connection.send([0x05, 0x01, 0x00])
                #expect(try await connection.readToEnd() == [0x05, 0xFF])
            }
            #expect(proxy.requests.isEmpty)
        }
        // And the other way round: a proxy without credentials does not take username/password.
        try await withSOCKSProxy { proxy, _ in
            for methods: [UInt8] in [[0x02], [], [0x01, 0x80, 0xFE]] {
                try await TestConnection.with(port: proxy.port) { connection in
                    try await connection.send([0x05, UInt8(methods.count)] + methods)
                    #expect(try await connection.readToEnd() == [0x05, 0xFF], "\(methods)")
                }
            }
        }
    }

    // MARK: Robustness and lifecycle

    @Test func hostileInputDoesNotTakeTheProxyDown() async throws {
        let origin = MockServer()
        origin.route("/alive", response: .ok("alive"))
        try await withSOCKSProxy(origin: origin) { proxy, origin in
            let cases: [(sent: [UInt8], halfClose: Bool, expected: [UInt8])] = [
                // SOCKS4 and HTTP are not spoken: closed without a word.
                ([0x04, 0x01, 0x00, 0x50, 127, 0, 0, 1, 0], false, []),
                (Array("GET / HTTP/1.1\r\n\r\n".utf8), false, []),
                // A request with the wrong version after a good greeting.
                ([0x05, 0x01, 0x00, 0x04, 0x01, 0x00, 0x01, 127, 0, 0, 1, 0, 80], false, [0x05, 0x00]),
                // An empty domain name is not a loopback target.
                (
                    [0x05, 0x01, 0x00, 0x05, 0x01, 0x00, 0x03, 0x00, 0, 80], false,
                    [0x05, 0x00] + SOCKSBytes.failure(0x02)
                ),
                // Messages cut short by the end of input.
                ([0x05, 0xFF, 0x00], true, []),
                ([0x05, 0x01, 0x00, 0x05, 0x01, 0x00, 0x03, 0xFF, 0x61], true, [0x05, 0x00]),
                // Unsolicited credentials with a version of their own, to a proxy that asks for none.
                ([0x05, 0x01, 0x00, 0x01, 0x01, 0x61, 0x01, 0x62], false, [0x05, 0x00]),
            ]
            for item in cases {
                try await TestConnection.with(port: proxy.port) { connection in
                    try await connection.send(item.sent)
                    if item.halfClose {
                        connection.finishSending()
                    }
                    #expect(try await connection.readToEnd() == item.expected, "\(item.sent)")
                }
            }
            try await TestConnection.with(port: proxy.port) { connection in
                try await connection.send(
                    [0x05, 0x01, 0x00]
                        + SOCKSBytes.request(addressType: 0x01, address: [127, 0, 0, 1], port: origin.port))
                _ = try await connection.readBytes(12)
                try await connection.sendRequest("GET", "/alive")
                #expect(try await connection.readResponse().text == "alive")
            }
        }
    }

    @Test func halfCloseIsPassedOnThroughTheTunnel() async throws {
        let origin = MockServer()
        origin.route("/h", response: .ok("after half-close"))
        try await withSOCKSProxy(origin: origin) { proxy, origin in
            try await TestConnection.with(port: proxy.port) { connection in
                // Everything, then the end of input, before the proxy can have connected.
                try await connection.send(
                    [0x05, 0x01, 0x00]
                        + SOCKSBytes.request(addressType: 0x01, address: [127, 0, 0, 1], port: origin.port)
                        + Array("GET /h HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8))
                connection.finishSending()
                #expect(try await connection.readBytes(12)[0..<4] == [0x05, 0x00, 0x05, 0x00])
                // The mock server answers what it has and closes once its client's side has ended.
                #expect(try await connection.readResponse().text == "after half-close")
                #expect(try await connection.isClosedByServer())
            }
        }
    }

    @Test func shutdownClosesOpenTunnelsAndIsIdempotent() async throws {
        let origin = MockServer()
        origin.route("/never", response: .silent)
        try await withServer(origin) { origin in
            let proxy = MockSOCKSProxy()
            try await proxy.start()
            #expect(proxy.port > 0)
            await #expect(throws: MockServerError.alreadyStarted) { try await proxy.start() }
            try await TestConnection.with(port: proxy.port) { connection in
                try await connection.send(
                    [0x05, 0x01, 0x00]
                        + SOCKSBytes.request(addressType: 0x01, address: [127, 0, 0, 1], port: origin.port))
                _ = try await connection.readBytes(12)
                try await connection.sendRequest("GET", "/never")
                #expect(try await eventually { origin.requests.count == 1 })
                try await proxy.shutdown()
                try await proxy.shutdown()
                #expect(try await connection.isClosedByServer())
            }
            #expect(try await eventually { origin.openConnectionCount == 0 })
        }
    }
}

// MARK: Helpers

/// Client messages and replies of SOCKS5, as bytes.
private enum SOCKSBytes {
    static func request(command: UInt8 = 0x01, addressType: UInt8, address: [UInt8], port: Int) -> [UInt8] {
        [0x05, command, 0x00, addressType] + address + [UInt8(port >> 8), UInt8(port & 0xFF)]
    }

    /// A domain name with its length byte.
    static func domain(_ name: String) -> [UInt8] {
        [UInt8(name.utf8.count)] + Array(name.utf8)
    }

    static func credentials(user: String, password: String) -> [UInt8] {
        [0x01] + domain(user) + domain(password)
    }

    /// A failure reply, as the proxy sends it (IPv4 form, all zeros).
    static func failure(_ code: UInt8) -> [UInt8] {
        [0x05, code, 0x00, 0x01, 0, 0, 0, 0, 0, 0]
    }
}

/// Whether a socket can listen on ::1 here (IPv6 may be disabled in a container).
private let isIPv6LoopbackAvailable: Bool = {
    guard
        let listener = try? ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: "::1", port: 0).wait()
    else { return false }
    try? listener.close().wait()
    return true
}()

/// Runs `body` with a started SOCKS proxy and a started origin server; always shuts both down.
private func withSOCKSProxy<Result: Sendable>(
    _ proxy: MockSOCKSProxy = MockSOCKSProxy(),
    origin: MockServer = MockServer(),
    _ body: @escaping @Sendable (MockSOCKSProxy, MockServer) async throws -> Result
) async throws -> Result {
    try await withServer(origin) { origin in
        try await proxy.start()
        do {
            let result = try await body(proxy, origin)
            try await proxy.shutdown()
            return result
        } catch {
            try? await proxy.shutdown()
            throw error
        }
    }
}
