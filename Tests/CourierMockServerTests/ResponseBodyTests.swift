import Foundation
import Testing

@testable import CourierMockServer

@Suite struct ResponseBodyTests {
    @Test func patternBytesAreDeterministic() {
        let bytes = [UInt8](MockBody.patternBytes(offset: 0, count: 600))
        #expect(bytes.count == 600)
        #expect(bytes.enumerated().allSatisfy { $0.element == UInt8($0.offset % 251) })
        let shifted = [UInt8](MockBody.patternBytes(offset: 250, count: 3))
        #expect(shifted == [250, 0, 1])
        let far = [UInt8](MockBody.patternBytes(offset: 1_000_000_007, count: 20_000))
        #expect(far.enumerated().allSatisfy { $0.element == UInt8((1_000_000_007 + $0.offset) % 251) })
        #expect(MockBody.pattern(length: 1234).length == 1234)
        #expect(MockBody.data(Data([1, 2, 3])).length == 3)
    }

    @Test func chunkedResponseIsFramedInChunks() async throws {
        var scripted = MockResponse(body: .data(Data("abcdefghij".utf8)))
        scripted.chunked = true
        scripted.chunkSize = 4
        let server = MockServer()
        server.enqueue(scripted)
        try await withServer(server) { server in
            try await TestConnection.with(port: server.port) { connection in
                try await connection.sendRequest("GET", "/chunks", headers: ["Connection: close"])
                let wire = String(decoding: try await connection.readToEnd(), as: UTF8.self)
                #expect(wire.contains("Transfer-Encoding: chunked\r\n"))
                #expect(!wire.contains("Content-Length"))
                #expect(wire.hasSuffix("\r\n\r\n4\r\nabcd\r\n4\r\nefgh\r\n2\r\nij\r\n0\r\n\r\n"))
            }
        }
    }

    @Test func chunkedPatternBodyOnKeepAlive() async throws {
        var scripted = MockResponse(body: .pattern(length: 100_000))
        scripted.chunked = true
        scripted.chunkSize = 7000
        let server = MockServer()
        server.route("/p", response: scripted)
        try await withServer(server) { server in
            try await TestConnection.with(port: server.port) { connection in
                for _ in 0..<2 {
                    try await connection.sendRequest("GET", "/p")
                    let response = try await connection.readResponse()
                    #expect(response.header("Transfer-Encoding") == "chunked")
                    #expect(response.body == [UInt8](MockBody.patternBytes(offset: 0, count: 100_000)))
                }
            }
            #expect(server.connectionCount == 1)
        }
    }

    @Test func largePatternBodyIsStreamed() async throws {
        let length = 24 * 1024 * 1024 + 13
        let server = MockServer()
        server.route("/big", response: MockResponse(body: .pattern(length: Int64(length))))
        try await withServer(server) { server in
            try await TestConnection.with(port: server.port) { connection in
                try await connection.sendRequest("GET", "/big")
                let response = try await connection.readResponse()
                #expect(response.header("Content-Length") == "\(length)")
                #expect(response.body.count == length)
                #expect(sha256Hex(response.body) == sha256Hex(MockBody.patternBytes(offset: 0, count: length)))
            }
        }
    }

    @Test func headGetsHeadersWithoutBody() async throws {
        let server = MockServer()
        server.route("/doc", method: "GET", response: .ok("twelve bytes"))
        try await withServer(server) { server in
            try await TestConnection.with(port: server.port) { connection in
                try await connection.sendRequest("HEAD", "/doc")
                let head = try await connection.readResponse(isHead: true)
                #expect(head.status == 200)
                #expect(head.header("Content-Length") == "12")
                // The next response on the same connection must start right after the head.
                try await connection.sendRequest("GET", "/doc")
                let get = try await connection.readResponse()
                #expect(get.text == "twelve bytes")
            }
            #expect(server.requests.map(\.method) == ["HEAD", "GET"])
        }
    }

    @Test func noContentAndNotModifiedHaveNoBody() async throws {
        let server = MockServer()
        server.enqueue(
            MockResponse(status: 204, body: .data(Data("ignored".utf8))),
            MockResponse(status: 304, body: .data(Data("ignored".utf8))),
            .ok("after")
        )
        try await withServer(server) { server in
            try await TestConnection.with(port: server.port) { connection in
                try await connection.sendRequest("DELETE", "/a")
                let noContent = try await connection.readResponse()
                #expect(noContent.status == 204)
                #expect(noContent.header("Content-Length") == nil)
                try await connection.sendRequest("GET", "/b")
                #expect(try await connection.readResponse().status == 304)
                try await connection.sendRequest("GET", "/c")
                #expect(try await connection.readResponse().text == "after")
            }
        }
    }

    @Test func closeAfterBodyBytesTruncates() async throws {
        var scripted = MockResponse(body: .pattern(length: 10_000))
        scripted.closeAfterBodyBytes = 1000
        let server = MockServer()
        server.enqueue(scripted)
        try await withServer(server) { server in
            try await TestConnection.with(port: server.port) { connection in
                try await connection.sendRequest("GET", "/t")
                let head = try await connection.readHead()
                #expect(head.header("Content-Length") == "10000")
                let rest = try await connection.readToEnd()
                #expect(rest == [UInt8](MockBody.patternBytes(offset: 0, count: 1000)))
            }
        }
    }

    @Test func closeAfterBodyBytesTruncatesChunked() async throws {
        var scripted = MockResponse(body: .data(Data("0123456789".utf8)))
        scripted.chunked = true
        scripted.chunkSize = 4
        scripted.closeAfterBodyBytes = 6
        let server = MockServer()
        server.enqueue(scripted)
        try await withServer(server) { server in
            try await TestConnection.with(port: server.port) { connection in
                try await connection.sendRequest("GET", "/t")
                await #expect(throws: TestClientError.self) { try await connection.readResponse() }
            }
        }
        let server2 = MockServer()
        server2.enqueue(scripted)
        try await withServer(server2) { server in
            try await TestConnection.with(port: server.port) { connection in
                try await connection.sendRequest("GET", "/t")
                let wire = String(decoding: try await connection.readToEnd(), as: UTF8.self)
                #expect(wire.hasSuffix("\r\n\r\n4\r\n0123\r\n2\r\n45\r\n"))
            }
        }
    }

    @Test func rawBytesAreWrittenVerbatimThenClosed() async throws {
        let bytes = "HTTP/1.1 200 OK\r\nContent-Length: 50\r\nX-Broken: yes\r\n\r\nshort"
        let server = MockServer()
        server.enqueue(.raw(bytes))
        try await withServer(server) { server in
            try await TestConnection.with(port: server.port) { connection in
                try await connection.sendRequest("GET", "/raw")
                let wire = try await connection.readToEnd()
                #expect(String(decoding: wire, as: UTF8.self) == bytes)
            }
        }
    }

    @Test func explicitContentLengthIsNotDuplicated() async throws {
        let server = MockServer()
        server.enqueue(MockResponse(headers: [("content-length", "3")], body: .data(Data("abc".utf8))))
        try await withServer(server) { server in
            try await TestConnection.with(port: server.port) { connection in
                try await connection.sendRequest("GET", "/", headers: ["Connection: close"])
                let wire = String(decoding: try await connection.readToEnd(), as: UTF8.self)
                #expect(wire.lowercased().components(separatedBy: "content-length").count == 2)
                #expect(wire.hasSuffix("\r\n\r\nabc"))
            }
        }
    }

    @Test func chunkDelayThrottlesTheBody() async throws {
        var scripted = MockResponse(body: .pattern(length: 4000))
        scripted.chunkSize = 1000
        scripted.chunkDelay = .milliseconds(100)
        let server = MockServer()
        server.route("/throttled", response: scripted)
        try await withServer(server) { server in
            let elapsed = try await ContinuousClock().measure {
                try await TestConnection.with(port: server.port) { connection in
                    try await connection.sendRequest("GET", "/throttled")
                    let response = try await connection.readResponse()
                    #expect(response.body == [UInt8](MockBody.patternBytes(offset: 0, count: 4000)))
                }
            }
            #expect(elapsed >= .milliseconds(300))
        }
    }
}
