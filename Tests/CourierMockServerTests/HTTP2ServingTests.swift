import Foundation
import NIOHTTP2
import Testing

@testable import CourierMockServer

@Suite struct HTTP2ServingTests {
    @Test func getOverH2GetsTheScriptedResponseAndIsRecordedAsH2() async throws {
        let server = MockServer(scheme: .http2)
        server.route("/hello", response: MockResponse(headers: [("X-Custom", "yes")], body: .data(Data("hi".utf8))))
        try await withServer(server) { server in
            #expect(server.baseURL.absoluteString == "https://127.0.0.1:\(server.port)")
            try await H2TestConnection.with(server) { connection in
                #expect(connection.negotiatedProtocol == "h2")
                let stream = try await connection.sendRequest("GET", "/hello?q=1", fields: [("user-agent", "h2-test")])
                let response = try await connection.response(on: stream)
                #expect(response.status == 200)
                #expect(response.text == "hi")
                #expect(response.field("x-custom") == "yes")
                #expect(response.field("content-length") == "2")
                #expect(response.ended)
            }
            let request = try #require(server.requests.first)
            #expect(request.protocolName == "h2")
            #expect(request.version == "HTTP/2.0")
            #expect(request.streamID == 1)
            #expect(request.path == "/hello")
            #expect(request.query == "q=1")
            #expect(request.connectionID == 1)
            #expect(request.clientPort != nil)
            // :authority stands in for Host; the fields are the ones the client sent, nothing the codec made up.
            #expect(request.header("Host") == "localhost")
            #expect(request.header("User-Agent") == "h2-test")
            #expect(request.headers.map(\.name) == ["host", "user-agent"])
            #expect(server.http2StreamCount == 1)
        }
    }

    @Test func concurrentStreamsShareOneConnection() async throws {
        let server = MockServer(scheme: .http2)
        server.route("/slow", response: .delayed("slow", by: .milliseconds(200)))
        server.route("/fast", response: .ok("fast"))
        try await withServer(server) { server in
            try await H2TestConnection.with(server) { connection in
                let slow = try await connection.sendRequest("GET", "/slow")
                let fast = try await connection.sendRequest("GET", "/fast")
                // The later stream is answered first: streams do not wait for each other.
                let fastResponse = try await connection.response(on: fast)
                #expect(fastResponse.text == "fast")
                let endOfSlow = connection.frames.firstIndex { Int($0.streamID) == slow && Self.endsStream($0) }
                #expect(endOfSlow == nil)
                #expect(try await connection.response(on: slow).text == "slow")
            }
            let requests = server.requests
            #expect(requests.count == 2)
            #expect(Set(requests.map(\.connectionID)) == [1])
            #expect(Set(requests.compactMap(\.streamID)) == [1, 3])
            #expect(server.connectionCount == 1)
            #expect(server.http2StreamCount == 2)
        }
    }

    @Test func anHTTP11ClientOfAnHTTP2ServerIsServedOverHTTP11() async throws {
        let server = MockServer(scheme: .http2)
        server.route("/old", response: .ok("still here"))
        try await withServer(server) { server in
            let tls = try clientTLSContext(trusting: server)
            try await TestConnection.with(port: server.port, tls: tls) { connection in
                #expect(connection.negotiatedProtocol == "http/1.1")
                try await connection.sendRequest("GET", "/old")
                let response = try await connection.readResponse()
                #expect(response.status == 200)
                #expect(response.text == "still here")
            }
            let request = try #require(server.requests.first)
            #expect(request.protocolName == "http/1.1")
            #expect(request.version == "HTTP/1.1")
            #expect(request.streamID == nil)
            #expect(server.http2StreamCount == 0)
        }
    }

    @Test func httpsStillOffersOnlyHTTP11() async throws {
        try await withServer(MockServer(scheme: .https)) { server in
            let tls = try clientTLSContext(trusting: server, applicationProtocols: ["h2", "http/1.1"])
            try await TestConnection.with(port: server.port, tls: tls) { connection in
                #expect(connection.negotiatedProtocol == "http/1.1")
            }
        }
    }

    @Test func settingsAnnounceTheConfiguredLimits() async throws {
        let settings = MockHTTP2Settings(maxConcurrentStreams: 7, initialWindowSize: 1000)
        try await withServer(MockServer(scheme: .http2, http2Settings: settings)) { server in
            try await H2TestConnection.with(server) { connection in
                let frame = try await connection.frame { frame in
                    if case .settings(.settings) = frame.payload { return true }
                    return false
                }
                guard case .settings(.settings(let announced)) = frame.payload else {
                    Issue.record("unexpected frame: \(frame.payload)")
                    return
                }
                let values = Dictionary(announced.map { ($0.parameter, $0.value) }, uniquingKeysWith: { $1 })
                #expect(values[.maxConcurrentStreams] == 7)
                #expect(values[.initialWindowSize] == 1000)
            }
        }
    }

    @Test func defaultSettingsAnnounce100StreamsAndTheStandardWindow() async throws {
        try await withServer(MockServer(scheme: .http2)) { server in
            try await H2TestConnection.with(server) { connection in
                let frame = try await connection.frame { frame in
                    if case .settings(.settings) = frame.payload { return true }
                    return false
                }
                guard case .settings(.settings(let announced)) = frame.payload else {
                    Issue.record("unexpected frame: \(frame.payload)")
                    return
                }
                let values = Dictionary(announced.map { ($0.parameter, $0.value) }, uniquingKeysWith: { $1 })
                #expect(values[.maxConcurrentStreams] == 100)
                #expect(values[.initialWindowSize] == 65_535)
            }
        }
    }

    @Test func throttledBodyArrivesInSeveralDataFrames() async throws {
        var scripted = MockResponse.ok("abcdefghijkl")
        scripted.chunkSize = 4
        scripted.chunkDelay = .milliseconds(30)
        let server = MockServer(scheme: .http2)
        server.route("/slow", response: scripted)
        try await withServer(server) { server in
            try await H2TestConnection.with(server) { connection in
                let stream = try await connection.sendRequest("GET", "/slow")
                let started = ContinuousClock.now
                let response = try await connection.response(on: stream)
                #expect(response.text == "abcdefghijkl")
                #expect(response.dataFrameSizes.filter { $0 > 0 } == [4, 4, 4])
                #expect(ContinuousClock.now - started >= .milliseconds(60))
            }
        }
    }

    @Test func chunkedResponsesLoseTheirConnectionSpecificFields() async throws {
        var scripted = MockResponse.ok("chunk by chunk")
        scripted.chunked = true
        scripted.chunkSize = 5
        scripted.headers += [("Connection", "keep-alive"), ("Keep-Alive", "timeout=5")]
        let server = MockServer(scheme: .http2)
        server.route("/chunked", response: scripted)
        try await withServer(server) { server in
            try await H2TestConnection.with(server) { connection in
                let response = try await connection.response(on: try await connection.sendRequest("GET", "/chunked"))
                #expect(response.text == "chunk by chunk")
                #expect(response.dataFrameSizes.filter { $0 > 0 } == [5, 5, 4])
                for name in ["connection", "keep-alive", "transfer-encoding"] {
                    #expect(response.field(name) == nil, "\(name) must not go out on HTTP/2")
                }
                #expect(response.field("content-type") == "text/plain; charset=utf-8")
            }
        }
    }

    @Test func informationalHeadsComeAsSeparateHeadersFrames() async throws {
        var scripted = MockResponse.ok("final")
        scripted.informational = [(status: 103, headers: [(name: "Link", value: "</style.css>; rel=preload")])]
        let server = MockServer(scheme: .http2)
        server.route("/hints", response: scripted)
        try await withServer(server) { server in
            try await H2TestConnection.with(server) { connection in
                let response = try await connection.response(on: try await connection.sendRequest("GET", "/hints"))
                #expect(response.informational.count == 1)
                let hints = response.informational.first ?? []
                #expect(hints.first { $0.name == ":status" }?.value == "103")
                #expect(hints.first { $0.name == "link" }?.value == "</style.css>; rel=preload")
                #expect(response.status == 200)
                #expect(response.text == "final")
            }
        }
    }

    @Test func headRequestsGetHeadersOnly() async throws {
        let server = MockServer(scheme: .http2)
        server.route("/doc", response: .ok("hello"))
        try await withServer(server) { server in
            try await H2TestConnection.with(server) { connection in
                let response = try await connection.response(on: try await connection.sendRequest("HEAD", "/doc"))
                #expect(response.status == 200)
                #expect(response.field("content-length") == "5")
                #expect(response.body.isEmpty)
                #expect(response.ended)
            }
        }
    }

    @Test func requestBodiesAreRecorded() async throws {
        try await withServer(MockServer(scheme: .http2)) { server in
            try await H2TestConnection.with(server) { connection in
                let body = Array("payload".utf8)
                let stream = try await connection.sendRequest("POST", "/upload", body: body)
                #expect(try await connection.response(on: stream).status == 404)
            }
            let request = try #require(server.requests.first)
            #expect(request.method == "POST")
            #expect(request.body == Data("payload".utf8))
            #expect(request.bodySHA256 == sha256Hex(Data("payload".utf8)))
            #expect(request.header("Content-Length") == "7")
            #expect(request.header("Transfer-Encoding") == nil)
        }
    }

    @Test func truncatedBodyResetsTheStream() async throws {
        var scripted = MockResponse.ok("0123456789abcdefghij")
        scripted.closeAfterBodyBytes = 5
        let server = MockServer(scheme: .http2)
        server.route("/cut", response: scripted)
        server.route("/next", response: .ok("fine"))
        try await withServer(server) { server in
            try await H2TestConnection.with(server) { connection in
                let response = try await connection.response(on: try await connection.sendRequest("GET", "/cut"))
                #expect(response.field("content-length") == "20")
                #expect(response.text == "01234")
                #expect(response.resetCode == .cancel)
                // Only the stream ended: the connection serves the next request.
                #expect(
                    try await connection.response(on: try await connection.sendRequest("GET", "/next")).text == "fine")
            }
            #expect(server.connectionCount == 1)
        }
    }

    @Test func closeWithoutResponseResetsTheStream() async throws {
        var scripted = MockResponse.ok("never")
        scripted.closeWithoutResponse = true
        let server = MockServer(scheme: .http2)
        server.route("/gone", response: scripted)
        try await withServer(server) { server in
            try await H2TestConnection.with(server) { connection in
                let response = try await connection.response(on: try await connection.sendRequest("GET", "/gone"))
                #expect(response.resetCode == .cancel)
                #expect(response.fields.isEmpty)
            }
            #expect(server.requests.count == 1)
        }
    }

    @Test func rawResponsesPassWhenTheyParseAndResetTheStreamWhenNot() async throws {
        let server = MockServer(scheme: .http2)
        server.route("/parses", response: .raw("HTTP/1.1 201 Created\r\nX-Raw: 1\r\n\r\nuntil close"))
        server.route("/garbage", response: .raw("this is not HTTP\r\n\r\n"))
        try await withServer(server) { server in
            try await H2TestConnection.with(server) { connection in
                let parsed = try await connection.response(on: try await connection.sendRequest("GET", "/parses"))
                #expect(parsed.status == 201)
                #expect(parsed.field("x-raw") == "1")
                #expect(parsed.text == "until close")
                #expect(parsed.ended)
                let garbage = try await connection.response(on: try await connection.sendRequest("GET", "/garbage"))
                #expect(garbage.resetCode == .internalError)
            }
        }
    }

    @Test func pingsAreCounted() async throws {
        try await withServer(MockServer(scheme: .http2)) { server in
            try await H2TestConnection.with(server) { connection in
                let data = HTTP2PingData(withInteger: 0x0102_0304)
                try await connection.send(HTTP2Frame(streamID: .rootStream, payload: .ping(data, ack: false)))
                let ack = try await connection.frame { frame in
                    if case .ping(_, ack: true) = frame.payload { return true }
                    return false
                }
                if case .ping(let echoed, _) = ack.payload {
                    #expect(echoed == data)
                }
                #expect(try await eventually { server.receivedPingCount == 1 })
            }
        }
    }

    @Test func largeBodiesFollowTheClientsFlowControlWindow() async throws {
        let length = 200_000
        let server = MockServer(scheme: .http2)
        server.route("/big", response: MockResponse(body: .pattern(length: Int64(length))))
        try await withServer(server) { server in
            try await H2TestConnection.with(server) { connection in
                let stream = try await connection.sendRequest("GET", "/big")
                // The client's initial windows (65 535 bytes) let that much through, and no more.
                _ = try await connection.frame { _ in connection.bodyBytesReceived(on: stream) >= 65_535 }
                try await Task.sleep(for: .milliseconds(200))
                #expect(connection.bodyBytesReceived(on: stream) == 65_535)
                // The writer resumes when the windows open.
                try await connection.openWindows(of: stream, by: length)
                let response = try await connection.response(on: stream)
                #expect(response.body.count == length)
                #expect(Data(response.body) == MockBody.patternBytes(offset: 0, count: length))
            }
        }
    }

    @Test func protectedRoutesReadTheLowercaseAuthorizationField() async throws {
        let server = MockServer(scheme: .http2)
        server.protect("/vault", user: "alice", password: "pw", realm: "vault", response: .ok("secret"))
        try await withServer(server) { server in
            try await H2TestConnection.with(server) { connection in
                let challenged = try await connection.response(on: try await connection.sendRequest("GET", "/vault"))
                #expect(challenged.status == 401)
                #expect(challenged.field("www-authenticate")?.hasPrefix("Basic realm=\"vault\"") == true)
                let credentials = Data("alice:pw".utf8).base64EncodedString()
                let stream = try await connection.sendRequest(
                    "GET", "/vault", fields: [("authorization", "Basic \(credentials)")])
                #expect(try await connection.response(on: stream).text == "secret")
            }
        }
    }

    @Test func aSilentStreamDoesNotHoldUpTheOthers() async throws {
        let server = MockServer(scheme: .http2)
        server.route("/silent", response: .silent)
        server.route("/fast", response: .ok("fast"))
        try await withServer(server) { server in
            try await H2TestConnection.with(server) { connection in
                let silent = try await connection.sendRequest("GET", "/silent")
                #expect(
                    try await connection.response(on: try await connection.sendRequest("GET", "/fast")).text == "fast")
                try await Task.sleep(for: .milliseconds(100))
                #expect(!connection.frames.contains { Int($0.streamID) == silent })
            }
        }
    }

    @Test func servesHTTP2OnAUnixSocket() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("h2-\(UUID().uuidString).sock").path
        let server = MockServer(scheme: .http2, unixSocketPath: path)
        server.route("/local", response: .ok("over a socket"))
        try await withServer(server) { server in
            #expect(server.baseURL.absoluteString.hasPrefix("https+unix://"))
            try await H2TestConnection.with(server, unixSocketPath: path) { connection in
                #expect(connection.negotiatedProtocol == "h2")
                let response = try await connection.response(on: try await connection.sendRequest("GET", "/local"))
                #expect(response.text == "over a socket")
            }
            #expect(server.requests.first?.protocolName == "h2")
        }
        try? FileManager.default.removeItem(atPath: path)
    }

    private static func endsStream(_ frame: HTTP2Frame) -> Bool {
        switch frame.payload {
        case .headers(let headers): return headers.endStream
        case .data(let data): return data.endStream
        case .rstStream: return true
        default: return false
        }
    }
}
