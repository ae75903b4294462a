import CourierTestSupport
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import Testing

@testable import CourierMockServer

@Suite struct MockProxyTests {
    // MARK: CONNECT

    @Test func connectTunnelCarriesPlainHTTPByteExact() async throws {
        let origin = MockServer()
        let raw = "HTTP/1.1 201 Created\r\nX-Odd:  spaced \r\nContent-Length: 5\r\n\r\nhello"
        origin.route("/t", response: .raw(raw))
        try await withProxy(origin: origin) { proxy, origin in
            try await TestConnection.with(port: proxy.port) { connection in
                // The request follows the CONNECT head in the same write: the proxy must pass it on, not drop it.
                try await connection.send(
                    "CONNECT 127.0.0.1:\(origin.port) HTTP/1.1\r\nHost: 127.0.0.1:\(origin.port)\r\n\r\n"
                        + "GET /t?q=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                )
                let received = try await connection.readToEnd()
                #expect(
                    String(decoding: received, as: UTF8.self) == "HTTP/1.1 200 Connection Established\r\n\r\n" + raw)
            }
            #expect(origin.requests.map(\.target) == ["/t?q=1"])
            let recorded = proxy.requests
            #expect(recorded.map(\.method) == ["CONNECT"])
            #expect(recorded.first?.target == "127.0.0.1:\(origin.port)")
            #expect(recorded.first?.answeredStatus == 200)
            #expect(recorded.first?.connectionID == 1)
            #expect(recorded.first?.header("host") == "127.0.0.1:\(origin.port)")
        }
    }

    @Test func connectTunnelPassesHalfCloseOn() async throws {
        let origin = MockServer()
        origin.route("/h", response: .ok("after half-close"))
        try await withProxy(origin: origin) { proxy, origin in
            try await TestConnection.with(port: proxy.port) { connection in
                try await connection.send("CONNECT localhost:\(origin.port) HTTP/1.1\r\n\r\n")
                let established = try await connection.readHead()
                #expect(established.status == 200)
                #expect(established.reason == "Connection Established")
                try await connection.sendRequest("GET", "/h")
                // The mock server answers what it has and closes once its client's side has ended.
                connection.finishSending()
                let response = try await connection.readResponse()
                #expect(response.text == "after half-close")
                #expect(try await connection.isClosedByServer())
            }
            #expect(origin.requests.map(\.path) == ["/h"])
        }
    }

    @Test func connectTunnelCarriesTLSEndToEnd() async throws {
        let origin = MockServer(scheme: .https)
        origin.route("/secure", response: .ok("secret"))
        try await withProxy(origin: origin) { proxy, origin in
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.trustRoots = .certificates([try NIOSSLCertificate(bytes: origin.certificateDER, format: .der)]
            )
            let tls = try NIOSSLContext(configuration: configuration)

            let received = NIOLockedValueBox<[UInt8]>([])
            let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(ByteCollector(received))
                    }
                }
                .connect(host: "127.0.0.1", port: proxy.port).get()
            do {
                let connect = "CONNECT 127.0.0.1:\(origin.port) HTTP/1.1\r\nHost: 127.0.0.1:\(origin.port)\r\n\r\n"
                try await channel.writeAndFlush(ByteBuffer(string: connect))
                #expect(try await eventually { received.withLockedValue { $0.count } >= 39 })
                let head = received.withLockedValue { bytes in
                    defer { bytes = [] }
                    return String(decoding: bytes, as: UTF8.self)
                }
                #expect(head == "HTTP/1.1 200 Connection Established\r\n\r\n")

                // Now TLS with the origin, through the tunnel: the handshake only succeeds if bytes flow both ways
                // unchanged, and the origin's certificate (not the proxy's) is what the client verifies.
                try await channel.eventLoop.submit {
                    try channel.pipeline.syncOperations.addHandler(
                        NIOSSLClientHandler(context: tls, serverHostname: "localhost"), position: .first)
                }.get()
                let request = "GET /secure HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
                try await channel.writeAndFlush(ByteBuffer(string: request))
                #expect(
                    try await eventually(timeout: .seconds(10)) {
                        String(decoding: received.withLockedValue { $0 }, as: UTF8.self).hasSuffix("secret")
                    })
                let response = String(decoding: received.withLockedValue { $0 }, as: UTF8.self)
                #expect(response.hasPrefix("HTTP/1.1 200 OK\r\n"))
            } catch {
                try? await channel.close()
                throw error
            }
            try? await channel.close()
            #expect(origin.requests.map(\.path) == ["/secure"])
            #expect(proxy.requests.map(\.answeredStatus) == [200])
        }
    }

    @Test func connectToAClosedPortIsBadGateway() async throws {
        try await withProxy { proxy, _ in
            let refusing = try RefusingPort()
            try await TestConnection.with(port: proxy.port) { connection in
                try await connection.send("CONNECT 127.0.0.1:\(refusing.port) HTTP/1.1\r\n\r\n")
                let response = try await connection.readResponse()
                #expect(response.status == 502)
                #expect(response.header("Content-Length") == "0")
                #expect(try await connection.isClosedByServer())
            }
            #expect(proxy.requests.map(\.answeredStatus) == [502])
            withExtendedLifetime(refusing) {}
        }
    }

    @Test func connectBeyondLoopbackIsForbidden() async throws {
        try await withProxy { proxy, _ in
            // example.com must never be dialled: the answer has to be 403, not a 200 or a 502 from an attempt.
            for target in ["example.com:443", "10.0.0.1:80", "[2001:db8::1]:443", "127.0.0.2:80"] {
                try await TestConnection.with(port: proxy.port) { connection in
                    try await connection.send("CONNECT \(target) HTTP/1.1\r\nHost: \(target)\r\n\r\n")
                    let response = try await connection.readResponse()
                    #expect(response.status == 403, "\(target)")
                    #expect(try await connection.isClosedByServer())
                }
            }
            #expect(proxy.requests.map(\.answeredStatus) == [403, 403, 403, 403])
            #expect(
                proxy.requests.map(\.target) == ["example.com:443", "10.0.0.1:80", "[2001:db8::1]:443", "127.0.0.2:80"])
        }
    }

    @Test func shutdownClosesOpenTunnels() async throws {
        let origin = MockServer()
        origin.route("/never", response: .silent)
        try await withServer(origin) { origin in
            let proxy = MockProxy()
            try await proxy.start()
            try await TestConnection.with(port: proxy.port) { connection in
                try await connection.send("CONNECT 127.0.0.1:\(origin.port) HTTP/1.1\r\n\r\n")
                #expect(try await connection.readHead().status == 200)
                try await connection.sendRequest("GET", "/never")
                #expect(try await eventually { origin.requests.count == 1 })
                try await proxy.shutdown()
                try await proxy.shutdown()
                #expect(try await connection.isClosedByServer())
            }
            #expect(try await eventually { origin.openConnectionCount == 0 })
        }
    }

    // MARK: Absolute form

    @Test func absoluteFormGetIsForwardedInOriginForm() async throws {
        let origin = MockServer()
        origin.route("/a", response: .ok("got it"))
        try await withProxy(origin: origin) { proxy, origin in
            let target = "http://127.0.0.1:\(origin.port)/a?b=1"
            try await TestConnection.with(port: proxy.port) { connection in
                try await connection.send(
                    "GET \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(origin.port)\r\nProxy-Connection: keep-alive\r\n"
                        + "Connection: keep-alive\r\nX-Custom: kept\r\n\r\n"
                )
                let response = try await connection.readResponse()
                #expect(response.status == 200)
                #expect(response.text == "got it")
                // One connection per request: the client connection ends with the origin's.
                #expect(try await connection.isClosedByServer())
            }
            let forwarded = try #require(origin.requests.first)
            #expect(forwarded.target == "/a?b=1")
            #expect(forwarded.header("X-Custom") == "kept")
            #expect(forwarded.header("Host") == "127.0.0.1:\(origin.port)")
            #expect(forwarded.header("Proxy-Connection") == nil)
            #expect(forwarded.headers("Connection") == ["close"])
            #expect(proxy.requests.map(\.target) == [target])
            #expect(proxy.requests.map(\.answeredStatus) == [200])
        }
    }

    @Test func absoluteFormPostStreamsItsBody() async throws {
        let origin = MockServer()
        origin.route("/upload", method: "POST", response: .status(201))
        let body = Array(MockBody.patternBytes(offset: 0, count: 300_000))
        try await withProxy(origin: origin) { proxy, origin in
            try await TestConnection.with(port: proxy.port) { connection in
                try await connection.sendRequest(
                    "POST", "http://localhost:\(origin.port)/upload", headers: ["Content-Type: application/x-test"],
                    body: body)
                let response = try await connection.readResponse()
                #expect(response.status == 201)
            }
            let forwarded = try #require(origin.requests.first)
            #expect(forwarded.method == "POST")
            #expect(forwarded.target == "/upload")
            #expect(forwarded.bodyLength == body.count)
            #expect(forwarded.bodySHA256 == sha256Hex(body))
            #expect(forwarded.header("Content-Type") == "application/x-test")
            #expect(try await eventually { proxy.requests.first?.answeredStatus == 201 })
        }
    }

    @Test func absoluteFormChunkedBodyIsForwarded() async throws {
        let origin = MockServer()
        origin.route("/chunks", response: .ok("ok"))
        try await withProxy(origin: origin) { proxy, origin in
            try await TestConnection.with(port: proxy.port) { connection in
                try await connection.send(
                    "PUT http://127.0.0.1:\(origin.port)/chunks HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                        + "5\r\nhello\r\n"
                )
                try await connection.send("7\r\n, world\r\n0\r\n\r\n")
                #expect(try await connection.readResponse().text == "ok")
            }
            let forwarded = try #require(origin.requests.first)
            #expect(forwarded.method == "PUT")
            #expect(String(decoding: forwarded.body, as: UTF8.self) == "hello, world")
        }
    }

    @Test func absoluteFormToAClosedPortIsBadGateway() async throws {
        try await withProxy { proxy, _ in
            let refusing = try RefusingPort()
            try await TestConnection.with(port: proxy.port) { connection in
                try await connection.sendRequest("GET", "http://127.0.0.1:\(refusing.port)/")
                #expect(try await connection.readResponse().status == 502)
                #expect(try await connection.isClosedByServer())
            }
            #expect(proxy.requests.map(\.answeredStatus) == [502])
            withExtendedLifetime(refusing) {}
        }
    }

    @Test func absoluteFormBeyondLoopbackIsForbidden() async throws {
        try await withProxy { proxy, _ in
            try await TestConnection.with(port: proxy.port) { connection in
                try await connection.sendRequest("GET", "http://example.com/")
                #expect(try await connection.readResponse().status == 403)
                #expect(try await connection.isClosedByServer())
            }
            #expect(proxy.requests.map(\.answeredStatus) == [403])
        }
    }

    @Test func originFormIsBadRequest() async throws {
        try await withProxy { proxy, _ in
            try await TestConnection.with(port: proxy.port) { connection in
                try await connection.sendRequest("GET", "/x")
                let response = try await connection.readResponse()
                #expect(response.status == 400)
                #expect(try await connection.isClosedByServer())
            }
            #expect(proxy.requests.map(\.target) == ["/x"])
            #expect(proxy.requests.map(\.answeredStatus) == [400])
        }
    }

    @Test func garbageDoesNotTakeTheProxyDown() async throws {
        let origin = MockServer()
        origin.route("/alive", response: .ok("alive"))
        try await withProxy(origin: origin) { proxy, origin in
            let inputs = [
                "\u{0}\u{1}\u{2} NOT HTTP\r\n\r\n", "CONNECT\r\n\r\n", "CONNECT :\r\n\r\n",
                "CONNECT [::1:80 HTTP/1.1\r\n\r\n",
                "CONNECT 127.0.0.1:99999 HTTP/1.1\r\n\r\n", "GET http://127.0.0.1:0/ HTTP/1.1\r\n\r\n",
                "GET http://user@127.0.0.1/ HTTP/1.1\r\n\r\n",
            ]
            for input in inputs {
                try await TestConnection.with(port: proxy.port) { connection in
                    try await connection.send(input)
                    _ = try await connection.readToEnd()
                }
            }
            try await TestConnection.with(port: proxy.port) { connection in
                try await connection.sendRequest("GET", "http://127.0.0.1:\(origin.port)/alive")
                #expect(try await connection.readResponse().text == "alive")
            }
        }
    }

    // MARK: Credentials

    @Test func connectWithoutCredentialsIsChallenged() async throws {
        let proxy = MockProxy(requiredCredentials: (user: "user", password: "secret"), realm: "test realm")
        try await withProxy(proxy) { proxy, origin in
            for credentials in [nil, "Basic " + Data("user:wrong".utf8).base64EncodedString(), "Bearer abc"] {
                try await TestConnection.with(port: proxy.port) { connection in
                    var head = "CONNECT 127.0.0.1:\(origin.port) HTTP/1.1\r\n"
                    if let credentials {
                        head += "Proxy-Authorization: \(credentials)\r\n"
                    }
                    try await connection.send(head + "\r\n")
                    let response = try await connection.readResponse()
                    #expect(response.status == 407)
                    #expect(response.header("Proxy-Authenticate") == "Basic realm=\"test realm\"")
                    #expect(response.header("Content-Length") == "0")
                    #expect(response.header("Connection") == "close")
                    #expect(try await connection.isClosedByServer())
                }
            }
            let good = "Basic " + Data("user:secret".utf8).base64EncodedString()
            try await TestConnection.with(port: proxy.port) { connection in
                try await connection.send(
                    "CONNECT 127.0.0.1:\(origin.port) HTTP/1.1\r\nProxy-Authorization: \(good)\r\n\r\n")
                #expect(try await connection.readHead().status == 200)
            }
            #expect(proxy.requests.map(\.answeredStatus) == [407, 407, 407, 200])
            #expect(proxy.requests.map(\.connectionID) == [1, 2, 3, 4])
        }
    }

    @Test func absoluteFormCanRetryWithCredentialsOnTheSameConnection() async throws {
        let proxy = MockProxy(requiredCredentials: (user: "user", password: "secret"))
        let origin = MockServer()
        origin.route("/p", response: .ok("through"))
        try await withProxy(proxy, origin: origin) { proxy, origin in
            let target = "http://127.0.0.1:\(origin.port)/p"
            let wrong = "Proxy-Authorization: Basic " + Data("user:nope".utf8).base64EncodedString()
            let right = "Proxy-Authorization: basic " + Data("user:secret".utf8).base64EncodedString()
            try await TestConnection.with(port: proxy.port) { connection in
                // The refused request's body is read and dropped, so the retry parses cleanly.
                try await connection.sendRequest("POST", target, body: Array("first".utf8))
                let first = try await connection.readResponse()
                #expect(first.status == 407)
                #expect(first.header("Proxy-Authenticate") == "Basic realm=\"mock proxy\"")
                #expect(first.header("Content-Length") == "0")
                try await connection.sendRequest("POST", target, headers: [wrong], body: Array("second".utf8))
                #expect(try await connection.readResponse().status == 407)
                try await connection.sendRequest("POST", target, headers: [right], body: Array("third".utf8))
                let third = try await connection.readResponse()
                #expect(third.text == "through")
            }
            #expect(origin.requests.count == 1)
            #expect(origin.requests.first?.header("Proxy-Authorization") == nil)
            #expect(origin.requests.first.map { String(decoding: $0.body, as: UTF8.self) } == "third")
            #expect(proxy.requests.map(\.connectionID) == [1, 1, 1])
            #expect(try await eventually { proxy.requests.map(\.answeredStatus) == [407, 407, 200] })
            #expect(proxy.requests.last?.header("Proxy-Authorization") != nil)
        }
    }

    @Test func startTwiceThrows() async throws {
        let proxy = MockProxy()
        try await proxy.start()
        await #expect(throws: MockServerError.alreadyStarted) { try await proxy.start() }
        #expect(proxy.url.absoluteString == "http://127.0.0.1:\(proxy.port)")
        #expect(proxy.port > 0)
        try await proxy.shutdown()
    }
}

// MARK: Helpers

/// Runs `body` with a started proxy and a started origin server; always shuts both down.
private func withProxy<Result: Sendable>(
    _ proxy: MockProxy = MockProxy(),
    origin: MockServer = MockServer(),
    _ body: @escaping @Sendable (MockProxy, MockServer) async throws -> Result
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

/// Collects the bytes a channel reads, for a client that changes its pipeline mid-connection (TLS after CONNECT).
private final class ByteCollector: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let received: NIOLockedValueBox<[UInt8]>

    init(_ received: NIOLockedValueBox<[UInt8]>) {
        self.received = received
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        received.withLockedValue { $0 += buffer.readableBytesView }
    }
}
