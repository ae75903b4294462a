import Crypto
import Foundation
import Testing

@testable import CourierMockServer

private let exampleKeyField = "Sec-WebSocket-Key: \(WebSocketTestClient.exampleKey)"

@Suite struct WebSocketHandshakeTests {
    @Test func upgradeIsAnswered101WithTheAcceptValueAndRecorded() async throws {
        let server = MockServer()
        server.webSocket("/socket")
        try await withServer(server) { server in
            try await WebSocketTestClient.with(server) { client in
                let response = try await client.upgrade(
                    "/socket?room=1",
                    headers: ["Cookie: session=abc", "Authorization: Bearer t0k", "X-Trace: 42"]
                )
                #expect(response.status == 101)
                #expect(response.reason == "Switching Protocols")
                // RFC 6455 §1.3's own example.
                #expect(response.header("Sec-WebSocket-Accept") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
                #expect(response.header("Upgrade") == "websocket")
                #expect(response.header("Connection") == "Upgrade")
                #expect(response.header("Sec-WebSocket-Protocol") == nil)
                #expect(response.header("Sec-WebSocket-Extensions") == nil)
                #expect(response.header("Content-Length") == nil)
            }
            let request = try #require(server.requests(path: "/socket").first)
            #expect(request.method == "GET")
            #expect(request.query == "room=1")
            #expect(request.header("Cookie") == "session=abc")
            #expect(request.header("Authorization") == "Bearer t0k")
            #expect(request.header("X-Trace") == "42")
            #expect(request.header("Sec-WebSocket-Key") == WebSocketTestClient.exampleKey)
        }
    }

    @Test func acceptValueIsTheSHA1OfKeyAndGUID() async throws {
        let server = MockServer()
        server.webSocket("/socket")
        let key = Data((0..<16).map { UInt8($0 * 7) }).base64EncodedString()
        let expected = Data(Insecure.SHA1.hash(data: Data((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8)))
            .base64EncodedString()
        try await withServer(server) { server in
            try await WebSocketTestClient.with(server) { client in
                let response = try await client.upgrade("/socket", key: key)
                #expect(response.status == 101)
                #expect(response.header("Sec-WebSocket-Accept") == expected)
            }
        }
    }

    @Test func theFirstOfferedSubprotocolTheEndpointSpeaksIsSelected() async throws {
        let server = MockServer()
        server.webSocket("/chat", endpoint: MockWebSocketEndpoint(subprotocols: ["chat.v1", "chat.v2"]))
        try await withServer(server) { server in
            let offers: [([String], String?)] = [
                (["Sec-WebSocket-Protocol: other, chat.v2, chat.v1"], "chat.v2"),
                // An offer split over two fields counts in order.
                (["Sec-WebSocket-Protocol: other", "Sec-WebSocket-Protocol: chat.v1,chat.v2"], "chat.v1"),
                (["Sec-WebSocket-Protocol: other, CHAT.V1"], nil),
                ([], nil),
            ]
            for (headers, selected) in offers {
                try await WebSocketTestClient.with(server) { client in
                    let response = try await client.upgrade("/chat", headers: headers)
                    #expect(response.status == 101)
                    #expect(response.header("Sec-WebSocket-Protocol") == selected)
                }
            }
            let recorded = server.requests(path: "/chat").map { $0.headers("Sec-WebSocket-Protocol") }
            #expect(recorded.first == ["other, chat.v2, chat.v1"])
            #expect(recorded.count == 4)
        }
    }

    @Test func extraResponseHeadersGoOnThe101() async throws {
        let server = MockServer()
        let endpoint = MockWebSocketEndpoint(
            extraResponseHeaders: [("Set-Cookie", "ws=1; Path=/"), ("X-Server", "mock")]
        )
        server.webSocket("/socket", endpoint: endpoint)
        try await withServer(server) { server in
            try await WebSocketTestClient.with(server) { client in
                let response = try await client.upgrade("/socket")
                #expect(response.status == 101)
                #expect(response.header("Set-Cookie") == "ws=1; Path=/")
                #expect(response.header("X-Server") == "mock")
            }
        }
    }

    @Test(arguments: [
        // Not a GET.
        ("POST", ["Upgrade: websocket", "Connection: Upgrade", exampleKeyField, "Sec-WebSocket-Version: 13"], 400),
        // A plain GET: no version.
        ("GET", [], 426),
        ("GET", ["Upgrade: websocket", "Connection: Upgrade", exampleKeyField, "Sec-WebSocket-Version: 8"], 426),
        ("GET", ["Connection: Upgrade", exampleKeyField, "Sec-WebSocket-Version: 13"], 400),
        ("GET", ["Upgrade: websocket", "Connection: keep-alive", exampleKeyField, "Sec-WebSocket-Version: 13"], 400),
        ("GET", ["Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Version: 13"], 400),
        // The key is the base64 of 5 bytes, not 16.
        (
            "GET",
            ["Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Key: c2hvcnQ=", "Sec-WebSocket-Version: 13"],
            400
        ),
    ])
    func requestsThatAreNoValidUpgradeAreRefusedAndTheConnectionCloses(
        method: String,
        headers: [String],
        status: Int
    ) async throws {
        let server = MockServer()
        server.webSocket("/socket")
        server.route("/socket", response: .ok("not this"))
        try await withServer(server) { server in
            try await WebSocketTestClient.with(server) { client in
                let head = "\(method) /socket HTTP/1.1\r\nHost: localhost\r\n" + headers.map { $0 + "\r\n" }.joined()
                try await client.send(Array((head + "Content-Length: 0\r\n\r\n").utf8))
                let response = try await client.readHead()
                #expect(response.status == status)
                #expect(response.text != "not this")
                #expect(response.header("Sec-WebSocket-Accept") == nil)
                #expect(response.header("Sec-WebSocket-Version") == (status == 426 ? "13" : nil))
                #expect(response.header("Connection") == "close")
                #expect(try await client.readToEnd().isEmpty)
            }
            #expect(server.requests(path: "/socket").count == 1)
        }
    }

    @Test func overrideResponseAnswersInsteadOf101() async throws {
        let server = MockServer()
        let unauthorized = MockResponse(status: 401, headers: [("WWW-Authenticate", "Basic realm=\"ws\"")])
        server.webSocket("/private", endpoint: MockWebSocketEndpoint(handshake: .response(unauthorized)))
        let redirect = MockResponse(status: 302, headers: [("Location", "/elsewhere")])
        server.webSocket("/moved", endpoint: MockWebSocketEndpoint(handshake: .response(redirect)))
        server.webSocket("/plain", endpoint: MockWebSocketEndpoint(handshake: .response(.ok("no upgrade here"))))
        try await withServer(server) { server in
            try await WebSocketTestClient.with(server) { client in
                let response = try await client.upgrade("/private")
                #expect(response.status == 401)
                #expect(response.header("WWW-Authenticate") == "Basic realm=\"ws\"")
                #expect(response.header("Sec-WebSocket-Accept") == nil)
                #expect(try await client.readToEnd().isEmpty)
            }
            try await WebSocketTestClient.with(server) { client in
                let response = try await client.upgrade("/moved")
                #expect(response.status == 302)
                #expect(response.header("Location") == "/elsewhere")
            }
            try await WebSocketTestClient.with(server) { client in
                let response = try await client.upgrade("/plain")
                #expect(response.status == 200)
                #expect(response.text == "no upgrade here")
            }
            #expect(server.requests.map(\.path) == ["/private", "/moved", "/plain"])
        }
    }

    @Test func overrideBadAcceptSends101WithAnotherWellFormedAccept() async throws {
        let server = MockServer()
        server.webSocket("/socket", endpoint: MockWebSocketEndpoint(handshake: .badAccept))
        try await withServer(server) { server in
            try await WebSocketTestClient.with(server) { client in
                let response = try await client.upgrade("/socket")
                #expect(response.status == 101)
                let accept = try #require(response.header("Sec-WebSocket-Accept"))
                #expect(accept != "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
                #expect(Data(base64Encoded: accept)?.count == 20)
                #expect(response.header("Upgrade") == "websocket")
            }
        }
    }

    @Test func overrideMissingUpgradeHeaderLeavesItOut() async throws {
        let server = MockServer()
        server.webSocket("/socket", endpoint: MockWebSocketEndpoint(handshake: .missingUpgradeHeader))
        try await withServer(server) { server in
            try await WebSocketTestClient.with(server) { client in
                let response = try await client.upgrade("/socket")
                #expect(response.status == 101)
                #expect(response.header("Upgrade") == nil)
                #expect(response.header("Connection") == "Upgrade")
                #expect(response.header("Sec-WebSocket-Accept") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
            }
        }
    }

    @Test func overrideUnrequestedSubprotocolSelectsWhatWasNotOffered() async throws {
        let server = MockServer()
        let endpoint = MockWebSocketEndpoint(subprotocols: ["chat"], handshake: .unrequestedSubprotocol("mqtt"))
        server.webSocket("/socket", endpoint: endpoint)
        try await withServer(server) { server in
            try await WebSocketTestClient.with(server) { client in
                let response = try await client.upgrade("/socket", headers: ["Sec-WebSocket-Protocol: chat"])
                #expect(response.status == 101)
                #expect(response.header("Sec-WebSocket-Protocol") == "mqtt")
            }
        }
    }

    @Test func aFrameRightBehindTheUpgradeRequestIsNotLost() async throws {
        let server = MockServer()
        server.webSocket("/socket")
        try await withServer(server) { server in
            try await WebSocketTestClient.with(server) { client in
                let frame = MockWebSocketFrame.bytes(
                    opcode: MockWebSocketFrame.Opcode.text,
                    masked: true,
                    payload: Array("early".utf8)
                )
                try await client.send(Array(WebSocketTestClient.upgradeRequest("/socket").utf8) + frame)
                #expect(try await client.readHead().status == 101)
                let echo = try await client.readFrame()
                #expect(echo.opcode == MockWebSocketFrame.Opcode.text)
                #expect(echo.text == "early")
            }
            #expect(server.webSocketMessages(path: "/socket") == [.text("early")])
        }
    }

    @Test func otherPathsStillServeHTTPAndH2RequestsForTheSocketPathAreRefused() async throws {
        let server = MockServer(scheme: .http2)
        server.webSocket("/socket")
        server.route("/plain", response: .ok("plain"))
        try await withServer(server) { server in
            try await H2TestConnection.with(server) { connection in
                let refused = try await connection.sendRequest("GET", "/socket")
                #expect(try await connection.response(on: refused).status == 400)
                // The HTTP/2 connection goes on.
                let plain = try await connection.sendRequest("GET", "/plain")
                #expect(try await connection.response(on: plain).text == "plain")
            }
        }
    }

    @Test(arguments: [MockServer.Scheme.https, .http2])
    func wssWorksOverTLSWithALPNHTTP11(scheme: MockServer.Scheme) async throws {
        let server = MockServer(scheme: scheme)
        server.webSocket("/secure", endpoint: MockWebSocketEndpoint(subprotocols: ["p"]))
        try await withServer(server) { server in
            try await WebSocketTestClient.with(server, tls: true) { client in
                #expect(client.negotiatedProtocol == "http/1.1")
                let response = try await client.upgrade("/secure", headers: ["Sec-WebSocket-Protocol: p"])
                #expect(response.status == 101)
                #expect(response.header("Sec-WebSocket-Protocol") == "p")
                try await client.send(text: "over tls")
                #expect(try await client.readFrame().text == "over tls")
                try await client.sendClose(code: 1000)
                #expect(try await client.readFrame().closeCode == 1000)
            }
            #expect(server.requests(path: "/secure").first?.protocolName == "http/1.1")
            #expect(server.webSocketMessages(path: "/secure") == [.text("over tls"), .close(code: 1000, reason: "")])
        }
    }
}
