import Foundation
import Testing

@testable import CourierMockServer

@Suite struct RecordedRequestTests {
    @Test func recordsMethodTargetHeadersAndBody() async throws {
        let body = Array("name=courier&x=1".utf8)
        try await withServer { server in
            try await TestConnection.with(port: server.port) { connection in
                try await connection.send(
                    "PUT /a/b?x=1&y=2 HTTP/1.1\r\nHost: example.test\r\nX-Custom: one\r\nx-custom: Two\r\n"
                        + "Content-Length: \(body.count)\r\n\r\n"
                )
                try await connection.send(body)
                _ = try await connection.readResponse()
            }
            let requests = server.requests
            #expect(requests.count == 1)
            let request = try #require(requests.first)
            #expect(request.method == "PUT")
            #expect(request.target == "/a/b?x=1&y=2")
            #expect(request.path == "/a/b")
            #expect(request.query == "x=1&y=2")
            #expect(request.version == "HTTP/1.1")
            #expect(request.headers.map(\.name) == ["Host", "X-Custom", "x-custom", "Content-Length"])
            #expect(request.header("HOST") == "example.test")
            #expect(request.header("x-CUSTOM") == "one")
            #expect(request.headers("X-Custom") == ["one", "Two"])
            #expect(request.header("Missing") == nil)
            #expect(request.body == Data(body))
            #expect(request.bodyLength == body.count)
            #expect(request.bodySHA256 == sha256Hex(body))
            #expect(request.connectionID == 1)
        }
    }

    @Test func emptyBodyHasTheEmptyDigestAndNoQuery() async throws {
        try await withServer { server in
            try await TestConnection.with(port: server.port) { connection in
                try await connection.sendRequest("GET", "/plain")
                _ = try await connection.readResponse()
            }
            let request = try #require(server.requests.first)
            #expect(request.query == nil)
            #expect(request.bodyLength == 0)
            #expect(request.bodySHA256 == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        }
    }

    @Test func chunkedRequestBodyIsDecoded() async throws {
        try await withServer { server in
            try await TestConnection.with(port: server.port) { connection in
                try await connection.send(
                    "POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                        + "5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n"
                )
                _ = try await connection.readResponse()
            }
            let request = try #require(server.requests(path: "/upload").first)
            #expect(String(decoding: request.body, as: UTF8.self) == "hello, world")
            #expect(request.bodyLength == 12)
            #expect(request.bodySHA256 == sha256Hex(Array("hello, world".utf8)))
        }
    }

    @Test func expectContinueGets100BeforeTheBody() async throws {
        let server = MockServer()
        server.route("/up", response: .ok("stored"))
        try await withServer(server) { server in
            try await TestConnection.with(port: server.port) { connection in
                try await connection.send(
                    "POST /up HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n"
                )
                let interim = try await connection.readHead()
                #expect(interim.status == 100)
                #expect(server.requests.isEmpty)
                try await connection.send("data")
                let final = try await connection.readResponse()
                #expect(final.status == 200)
                #expect(final.text == "stored")
            }
            #expect(server.requests.first?.body == Data("data".utf8))
        }
    }

    @Test func largeBodyIsHashedWholeAndKeptUpTo16MiB() async throws {
        let length = 16 * 1024 * 1024 + 100_000
        let body = [UInt8](MockBody.patternBytes(offset: 7, count: length))
        try await withServer { server in
            try await TestConnection.with(port: server.port) { connection in
                try await connection.sendRequest("POST", "/big", body: body)
                #expect(try await connection.readResponse().status == 404)
            }
            let request = try #require(server.requests.first)
            #expect(request.bodyLength == length)
            #expect(request.body.count == 16 * 1024 * 1024)
            #expect(request.body == Data(body[..<(16 * 1024 * 1024)]))
            #expect(request.bodySHA256 == sha256Hex(body))
        }
    }

    @Test func clearRequestsForgetsEverything() async throws {
        try await withServer { server in
            try await TestConnection.with(port: server.port) { connection in
                try await connection.sendRequest("GET", "/one")
                _ = try await connection.readResponse()
                try await connection.sendRequest("GET", "/two")
                _ = try await connection.readResponse()
            }
            #expect(server.requests.map(\.path) == ["/one", "/two"])
            #expect(server.requests(path: "/two").count == 1)
            server.clearRequests()
            #expect(server.requests.isEmpty)
        }
    }

    @Test func malformedRequestGets400AndClose() async throws {
        try await withServer { server in
            try await TestConnection.with(port: server.port) { connection in
                try await connection.send("NOT A REQUEST\r\n\r\n")
                let response = try await connection.readResponse()
                #expect(response.status == 400)
                #expect(try await connection.isClosedByServer())
            }
            #expect(server.requests.isEmpty)
        }
    }
}
