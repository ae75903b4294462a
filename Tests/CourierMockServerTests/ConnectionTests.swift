import Foundation
import Testing

@testable import CourierMockServer

@Suite struct ConnectionTests {
    @Test func keepAliveReusesTheConnection() async throws {
        try await withServer { server in
            try await TestConnection.with(port: server.port) { connection in
                try await connection.sendRequest("GET", "/1")
                let first = try await connection.readResponse()
                #expect(first.header("Connection") == nil)
                try await connection.sendRequest("GET", "/2")
                _ = try await connection.readResponse()
                #expect(server.openConnectionCount == 1)
            }
            let ids = server.requests.map(\.connectionID)
            #expect(ids == [1, 1])
            #expect(server.connectionCount == 1)
            #expect(try await eventually { server.openConnectionCount == 0 })
        }
    }

    @Test func separateConnectionsGetSeparateIDs() async throws {
        try await withServer { server in
            for _ in 0..<2 {
                try await TestConnection.with(port: server.port) { connection in
                    try await connection.sendRequest("GET", "/x")
                    _ = try await connection.readResponse()
                }
            }
            #expect(server.requests.map(\.connectionID) == [1, 2])
            #expect(server.connectionCount == 2)
        }
    }

    @Test func clientConnectionCloseIsRespected() async throws {
        try await withServer { server in
            try await TestConnection.with(port: server.port) { connection in
                try await connection.sendRequest("GET", "/bye", headers: ["Connection: close"])
                let response = try await connection.readResponse()
                #expect(response.status == 404)
                #expect(response.header("Connection") == "close")
                #expect(try await connection.isClosedByServer())
            }
        }
    }

    @Test func http10Closes() async throws {
        let server = MockServer()
        server.route("/old", response: .ok("legacy"))
        try await withServer(server) { server in
            try await TestConnection.with(port: server.port) { connection in
                try await connection.send("GET /old HTTP/1.0\r\n\r\n")
                let response = try await connection.readResponse()
                #expect(response.text == "legacy")
                #expect(try await connection.isClosedByServer())
            }
            #expect(server.requests.first?.version == "HTTP/1.0")
        }
    }

    /// NIO's parser (llhttp) reads nothing after a request that asks for an upgrade, or a `CONNECT`, whatever the
    /// answer. A route that answers one without switching protocols (RFC 9110 §7.8 lets a server ignore `Upgrade`)
    /// must close the connection: kept open, it left the client's next request unread, and the client hung.
    @Test(arguments: [
        "GET /plain HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
            + "HTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n",
        "CONNECT origin.example:443 HTTP/1.1\r\nHost: origin.example:443\r\n\r\n",
    ])
    func aRequestThatStopsTheParserIsAnsweredWithClose(request: String) async throws {
        let server = MockServer()
        server.route("/plain", response: .ok("plain"))
        try await withServer(server, timeout: .seconds(30)) { server in
            try await TestConnection.with(port: server.port) { connection in
                try await connection.send(request)
                let response = try await connection.readResponse()
                #expect(response.header("Connection") == "close")
                #expect(try await connection.isClosedByServer())
            }
        }
    }

    @Test func closeConnectionAddsHeaderAndCloses() async throws {
        var scripted = MockResponse.ok("last")
        scripted.closeConnection = true
        let server = MockServer()
        server.enqueue(scripted)
        try await withServer(server) { server in
            try await TestConnection.with(port: server.port) { connection in
                try await connection.sendRequest("GET", "/")
                let response = try await connection.readResponse()
                #expect(response.text == "last")
                #expect(response.header("Connection") == "close")
                #expect(try await connection.isClosedByServer())
            }
        }
    }

    @Test func closeWithoutResponseClosesAfterTheRequest() async throws {
        var scripted = MockResponse.ok("never seen")
        scripted.closeWithoutResponse = true
        let server = MockServer()
        server.enqueue(scripted)
        try await withServer(server) { server in
            try await TestConnection.with(port: server.port) { connection in
                try await connection.sendRequest("POST", "/drop", body: Array("payload".utf8))
                #expect(try await connection.readToEnd().isEmpty)
            }
            #expect(server.requests.first?.body == Data("payload".utf8))
        }
    }

    @Test func neverRespondIsClosedByShutdown() async throws {
        var scripted = MockResponse.ok("never")
        scripted.neverRespond = true
        let server = MockServer()
        server.enqueue(scripted)
        try await server.start()
        let port = server.port
        try await withTimeout(.seconds(30)) {
            try await TestConnection.with(port: port) { connection in
                try await connection.sendRequest("GET", "/hang")
                #expect(try await eventually { server.requests.count == 1 })
                #expect(server.openConnectionCount == 1)
                try await server.shutdown()
                #expect(server.openConnectionCount == 0)
                #expect(try await connection.readToEnd().isEmpty)
            }
        }
        try await server.shutdown()
        await #expect(throws: (any Error).self) {
            try await TestConnection.with(port: port) { _ in }
        }
    }

    @Test func pipelinedRequestsAreAnsweredInOrder() async throws {
        var slow = MockResponse.ok("first")
        slow.headDelay = .milliseconds(100)
        let server = MockServer()
        server.route("/1", response: slow)
        server.route("/2", response: .ok("second"))
        try await withServer(server) { server in
            try await TestConnection.with(port: server.port) { connection in
                try await connection.send("GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\n")
                #expect(try await connection.readResponse().text == "first")
                #expect(try await connection.readResponse().text == "second")
            }
            #expect(server.requests.map(\.path) == ["/1", "/2"])
        }
    }

    @Test func halfClosedClientStillGetsItsResponses() async throws {
        let server = MockServer()
        server.route("/a", response: .ok("alpha"))
        server.route("/b", response: .ok("beta"))
        try await withServer(server) { server in
            try await TestConnection.with(port: server.port) { connection in
                try await connection.sendRequest("GET", "/a")
                try await connection.sendRequest("GET", "/b")
                connection.finishSending()
                let first = try await connection.readResponse()
                #expect(first.text == "alpha")
                let second = try await connection.readResponse()
                #expect(second.text == "beta")
                #expect(try await connection.isClosedByServer())
            }
        }
    }

    @Test func neverRespondConnectionClosesWhenTheClientCloses() async throws {
        var scripted = MockResponse.ok("never")
        scripted.neverRespond = true
        let server = MockServer()
        server.enqueue(scripted)
        try await withServer(server) { server in
            try await TestConnection.with(port: server.port) { connection in
                try await connection.sendRequest("GET", "/hang")
                #expect(try await eventually { server.requests.count == 1 })
            }
            #expect(try await eventually { server.openConnectionCount == 0 })
        }
    }

    @Test func headDelayIsWaitedOnTheEventLoop() async throws {
        var slow = MockResponse.ok("slow")
        // Far apart, so that a machine running the whole suite on 2 cores cannot blur "waited" and "held up".
        slow.headDelay = .seconds(3)
        // For the "not held up" half: much slower still, so that seconds of stall on a loaded machine do not blur it.
        var slower = MockResponse.ok("slower")
        slower.headDelay = .seconds(12)
        let server = MockServer()
        server.route("/slow", response: slow)
        server.route("/slower", response: slower)
        server.route("/fast", response: .ok("fast"))
        try await withServer(server) { server in
            let clock = ContinuousClock()
            let slowTime = try await clock.measure {
                try await TestConnection.with(port: server.port) { connection in
                    try await connection.sendRequest("GET", "/slow")
                    #expect(try await connection.readResponse().text == "slow")
                }
            }
            #expect(slowTime >= .seconds(3))
            // A delayed response must not hold up other connections.
            async let delayed: Void = TestConnection.with(port: server.port) { connection in
                try await connection.sendRequest("GET", "/slower")
                _ = try await connection.readResponse()
            }
            let fastTime = try await clock.measure {
                try await TestConnection.with(port: server.port) { connection in
                    try await connection.sendRequest("GET", "/fast")
                    #expect(try await connection.readResponse().text == "fast")
                }
            }
            try await delayed
            #expect(fastTime < .seconds(8))
        }
    }
}
