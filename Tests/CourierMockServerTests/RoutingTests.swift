import Foundation
import Testing

@testable import CourierMockServer

@Suite struct RoutingTests {
    @Test func routeAnswersEveryMatchingRequest() async throws {
        let server = MockServer()
        server.route("/hello", response: .ok("hi there"))
        try await withServer(server) { server in
            try await TestConnection.with(port: server.port) { connection in
                for _ in 0..<2 {
                    try await connection.sendRequest("GET", "/hello?x=1")
                    let response = try await connection.readResponse()
                    #expect(response.status == 200)
                    #expect(response.reason == "OK")
                    #expect(response.text == "hi there")
                    #expect(response.header("Content-Type") == "text/plain; charset=utf-8")
                    #expect(response.header("Content-Length") == "8")
                }
            }
            #expect(server.requests(path: "/hello").count == 2)
        }
    }

    @Test func queueAnswersUnroutedRequestsInOrderThen404() async throws {
        let server = MockServer()
        server.enqueue(.ok("first"), .status(201))
        try await withServer(server) { server in
            try await TestConnection.with(port: server.port) { connection in
                try await connection.sendRequest("GET", "/a")
                #expect(try await connection.readResponse().text == "first")
                try await connection.sendRequest("POST", "/b", body: Array("x".utf8))
                let second = try await connection.readResponse()
                #expect(second.status == 201)
                #expect(second.reason == "Created")
                #expect(second.body.isEmpty)
                try await connection.sendRequest("GET", "/c")
                let third = try await connection.readResponse()
                #expect(third.status == 404)
                #expect(third.reason == "Not Found")
                #expect(!third.body.isEmpty)
            }
        }
    }

    /// RFC 9112 §3.2.2: a server must accept an absolute-form request-target, which a client sends to the server
    /// it takes for its proxy: it matches the route for its path, so `protect(asProxy:)` answers as a proxy would.
    @Test func absoluteFormTargetsMatchTheRouteForTheirPath() async throws {
        let server = MockServer()
        server.route("/hello", response: .ok("hi there"))
        server.protect("/p", user: "bob", password: "pw", asProxy: true, response: .ok("through"))
        try await withServer(server) { server in
            try await TestConnection.with(port: server.port) { connection in
                try await connection.sendRequest("GET", "http://origin.example:8080/hello?x=1")
                #expect(try await connection.readResponse().text == "hi there")
                try await connection.sendRequest("GET", "http://origin.example/p")
                #expect(try await connection.readResponse().status == 407)
                let right = "Proxy-Authorization: Basic " + Data("bob:pw".utf8).base64EncodedString()
                try await connection.sendRequest("GET", "http://origin.example/p", headers: [right])
                #expect(try await connection.readResponse().text == "through")
            }
            let request = try #require(server.requests(path: "/hello").first)
            #expect(request.target == "http://origin.example:8080/hello?x=1")
            #expect(request.query == "x=1")
        }
    }

    @Test(arguments: [
        ("http://h.example/a/b?x=1", "/a/b?x=1"),
        ("HTTP://h.example:8080", "/"),
        ("http://[::1]:8080?q", "/?q"),
        ("/a?x=http://h/b", "/a?x=http://h/b"),
        ("h.example:443", "h.example:443"),
        ("*", "*"),
    ])
    func theOriginFormOfATarget(target: String, expected: String) {
        #expect(RequestAccumulator.originForm(of: target) == expected)
    }

    @Test func defaultIs404WithShortBody() async throws {
        try await withServer { server in
            try await TestConnection.with(port: server.port) { connection in
                try await connection.sendRequest("GET", "/nothing/here")
                let response = try await connection.readResponse()
                #expect(response.status == 404)
                #expect(response.text.contains("/nothing/here"))
                #expect(response.body.count < 200)
            }
        }
    }

    @Test func methodRoutesWinAndLaterRegistrationReplaces() async throws {
        let server = MockServer()
        server.route("/r", response: .ok("any"))
        server.route("/r", method: "post", response: .ok("old post"))
        server.route("/r", method: "POST", response: .ok("post"))
        try await withServer(server) { server in
            try await TestConnection.with(port: server.port) { connection in
                try await connection.sendRequest("POST", "/r", body: [])
                #expect(try await connection.readResponse().text == "post")
                try await connection.sendRequest("PUT", "/r", body: [])
                #expect(try await connection.readResponse().text == "any")
                try await connection.sendRequest("GET", "/r/other")
                #expect(try await connection.readResponse().status == 404)
            }
        }
    }

    @Test func handlerSeesTheRequest() async throws {
        let server = MockServer()
        server.route("/echo", method: "POST") { request in
            var response = MockResponse.ok(request.body, contentType: request.header("content-type") ?? "none")
            response.headers.append(("X-Query", request.query ?? "-"))
            return response
        }
        try await withServer(server) { server in
            try await TestConnection.with(port: server.port) { connection in
                try await connection.sendRequest(
                    "POST",
                    "/echo?q=1",
                    headers: ["Content-Type: application/json"],
                    body: Array("{\"a\":1}".utf8)
                )
                let response = try await connection.readResponse()
                #expect(response.text == "{\"a\":1}")
                #expect(response.header("Content-Type") == "application/json")
                #expect(response.header("X-Query") == "q=1")
            }
        }
    }

    @Test func headersAreWrittenAsGivenWithCustomReason() async throws {
        var scripted = MockResponse(status: 299, headers: [("x-lower", "a"), ("X-Multi", "1"), ("X-Multi", "2")])
        scripted.reason = "Quite Fine"
        let server = MockServer()
        server.enqueue(scripted)
        try await withServer(server) { server in
            try await TestConnection.with(port: server.port) { connection in
                try await connection.sendRequest("GET", "/")
                let response = try await connection.readResponse()
                #expect(response.status == 299)
                #expect(response.reason == "Quite Fine")
                #expect(response.headers.map(\.name) == ["x-lower", "X-Multi", "X-Multi", "Content-Length"])
                #expect(response.headers.filter { $0.name == "X-Multi" }.map(\.value) == ["1", "2"])
            }
        }
    }

    @Test func urlsAreBuiltFromTheBoundPort() async throws {
        try await withServer { server in
            #expect(server.port > 0)
            #expect(server.baseURL.absoluteString == "http://127.0.0.1:\(server.port)")
            #expect(server.url("/a/b?x=1").absoluteString == "http://127.0.0.1:\(server.port)/a/b?x=1")
            #expect(server.url("c").absoluteString == "http://127.0.0.1:\(server.port)/c")
            #expect(server.url("/with space").absoluteString == "http://127.0.0.1:\(server.port)/with%20space")
            #expect(server.certificatePEM.isEmpty)
            #expect(server.certificateDER.isEmpty)
        }
        let https = MockServer(scheme: .https, host: "::1", port: 0)
        #expect(https.baseURL.absoluteString == "https://[::1]:0")
    }

    @Test func startTwiceThrows() async throws {
        try await withServer { server in
            await #expect(throws: MockServerError.alreadyStarted) { try await server.start() }
        }
    }
}
