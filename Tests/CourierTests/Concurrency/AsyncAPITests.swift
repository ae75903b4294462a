import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

@Suite("Swift concurrency API")
struct AsyncAPITests {
    @Test(arguments: WireProtocol.allCases)
    func dataForAndFrom(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            server.route("/a", response: .ok("async"))
            let session = makeSession()
            let (data, response) = try await session.data(from: server.url("/a"))
            #expect(data == Data("async".utf8))
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            var request = URLRequest(url: server.url("/a"))
            request.httpMethod = "PUT"
            let (putData, _) = try await session.data(for: request)
            #expect(putData == Data("async".utf8))
            #expect(server.requests.last?.method == "PUT")
        }
    }

    @Test func dataThrowsURLErrors() async throws {
        let url = try #require(URL(string: "http://no-such-host.invalid/"))
        await #expect(throws: URLError.self) { try await makeSession().data(from: url) }
        do {
            _ = try await makeSession().data(from: url)
        } catch let error as URLError {
            #expect(error.code == .cannotFindHost)
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func cancellingTheSwiftTaskCancelsTheURLTask(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            server.route("/slow", response: .silent)
            let session = makeSession()
            let call = Task { try await session.data(from: server.url("/slow")) }
            try await Task.sleep(for: .milliseconds(100))
            call.cancel()
            let result = await call.result
            guard case .failure(let error) = result else {
                Issue.record("expected a failure")
                return
            }
            #expect((error as? URLError)?.code == .cancelled)
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func bytesStreamLinesWithBackpressure(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            let text = (1...2000).map { "line \($0)" }.joined(separator: "\r\n") + "\n"
            var chunked = MockResponse.ok(text)
            chunked.chunked = true
            chunked.chunkSize = 777
            server.route("/lines", response: chunked)
            let (bytes, response) = try await makeSession().bytes(from: server.url("/lines"))
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            var lines: [String] = []
            for try await line in bytes.lines { lines.append(line) }
            #expect(lines.count == 2000)
            #expect(lines.first == "line 1")
            #expect(lines.last == "line 2000")
            #expect(bytes.task.state == .completed)
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func bytesOfALargeBodyAreExact(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            let length: Int64 = 3_000_000
            server.route("/big", response: MockResponse(body: .pattern(length: length)))
            let (bytes, _) = try await makeSession().bytes(from: server.url("/big"))
            var count: Int64 = 0
            var mismatches = 0
            for try await byte in bytes {
                if byte != UInt8(count % 251) { mismatches += 1 }
                count += 1
            }
            #expect(count == length)
            #expect(mismatches == 0)
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func bytesFailureSurfacesWhileIterating(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            var dropped = MockResponse.ok(Data(repeating: 3, count: 100_000))
            dropped.closeAfterBodyBytes = 5000
            server.route("/drop", response: dropped)
            let (bytes, _) = try await makeSession().bytes(from: server.url("/drop"))
            var received = 0
            do {
                for try await _ in bytes { received += 1 }
                Issue.record("expected an error")
            } catch let error as URLError {
                #expect(error.code == .networkConnectionLost)
            }
            #expect(received <= 5000)
        }
    }
}
