import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import NIOPosix
import Testing

@Suite("Error paths map to Darwin's URLError codes")
struct ErrorPathTests {
    @Test func refusedPortIsCannotConnectToHost() async throws {
        let refusing = try RefusingPort()
        let port = refusing.port
        defer { withExtendedLifetime(refusing) {} }
        let url = try #require(URL(string: "http://127.0.0.1:\(port)/x"))
        let outcome = await makeSession().runDataTask(url)
        #expect(outcome.urlError?.code == .cannotConnectToHost)
        #expect(outcome.urlError?.userInfo[NSURLErrorFailingURLErrorKey] as? URL == url)
        #expect(outcome.urlError?.userInfo["NSErrorFailingURLStringKey"] as? String == url.absoluteString)
    }

    @Test func unknownHostIsCannotFindHost() async throws {
        let url = try #require(URL(string: "http://no-such-host.invalid/"))
        let outcome = await makeSession().runDataTask(url)
        #expect(outcome.urlError?.code == .cannotFindHost)
    }

    @Test func unsupportedSchemeAndMissingHost() async throws {
        let session = makeSession()
        #expect(
            await session.runDataTask(try #require(URL(string: "ftp://127.0.0.1/x"))).urlError?.code == .unsupportedURL)
        #expect(await session.runDataTask(try #require(URL(string: "http:///nohost"))).urlError?.code == .badURL)
    }

    @Test func silentServerTimesOutTheRequest() async throws {
        try await withServer { server in
            server.route("/silent", response: .silent)
            var request = URLRequest(url: server.url("/silent"))
            request.timeoutInterval = 0.3
            let outcome = await makeSession().runDataTask(request)
            #expect(outcome.urlError?.code == .timedOut)
        }
    }

    @Test func sessionRequestTimeoutApplies() async throws {
        try await withServer { server in
            server.route("/silent", response: .silent)
            let session = makeSession { $0.timeoutIntervalForRequest = 0.3 }
            let outcome = await session.runDataTask(server.url("/silent"))
            #expect(outcome.urlError?.code == .timedOut)
        }
    }

    @Test func slowTrickleHitsTheResourceTimeoutNotTheRequestTimeout() async throws {
        try await withServer { server in
            // 100 bytes 200 ms apart: 20 s of trickle against a 0.5 s resource timeout, so that a machine stalled for
            // seconds (a full parallel suite on two cores) still cannot finish the body before the timer fires.
            var trickle = MockResponse.ok(Data(repeating: 1, count: 100))
            trickle.chunkSize = 1
            trickle.chunkDelay = .milliseconds(200)
            server.route("/trickle", response: trickle)
            let session = makeSession { configuration in
                configuration.timeoutIntervalForRequest = 1
                configuration.timeoutIntervalForResource = 0.5
            }
            let outcome = await session.runDataTask(server.url("/trickle"))
            #expect(outcome.urlError?.code == .timedOut)
        }
    }

    @Test func droppedConnectionMidBodyIsNetworkConnectionLost() async throws {
        try await withServer { server in
            var dropped = MockResponse.ok(Data(repeating: 2, count: 50_000))
            dropped.closeAfterBodyBytes = 1000
            server.route("/drop", response: dropped)
            let outcome = await makeSession().runDataTask(server.url("/drop"))
            #expect(outcome.urlError?.code == .networkConnectionLost)
            #expect(outcome.data == nil)
        }
    }

    @Test func closeWithoutResponseIsNetworkConnectionLost() async throws {
        try await withServer { server in
            var closing = MockResponse.ok("")
            closing.closeWithoutResponse = true
            server.route("/close", response: closing)
            let outcome = await makeSession().runDataTask(server.url("/close"))
            #expect(outcome.urlError?.code == .networkConnectionLost)
        }
    }

    @Test(arguments: [
        // Not HTTP at all: cannot be parsed.
        ("garbage\r\n\r\n", URLError.Code.cannotParseResponse),
        ("HTTP/1.1 abc OK\r\n\r\n", .cannotParseResponse),
        ("HTTP/1.1 200 OK\r\nBad Name: x\r\nContent-Length: 2\r\n\r\nhi", .cannotParseResponse),
        // Parsed, but breaking the protocol: a bad response.
        ("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 7\r\n\r\nhello", .badServerResponse),
        ("HTTP/1.1 200 OK\r\nContent-Length: -3\r\n\r\n", .badServerResponse),
        ("HTTP/1.1 200 OK\r\nX-Big: " + String(repeating: "a", count: 100_000) + "\r\n\r\n", .badServerResponse),
    ])
    func malformedResponsesFailWithDarwinsCodes(raw: String, code: URLError.Code) async throws {
        try await withServer { server in
            server.route("/bad", response: .raw(raw))
            let outcome = await makeSession().runDataTask(server.url("/bad"))
            #expect(outcome.urlError?.code == code)
        }
    }

    @Test func contentLengthWithoutSpaceIsTolerated() async throws {
        try await withServer { server in
            server.route("/tolerant", response: .raw("HTTP/1.1 200 OK\r\nContent-Length:13\r\n\r\nhello, world!"))
            let outcome = await makeSession().runDataTask(server.url("/tolerant"))
            #expect(outcome.error == nil)
            #expect(outcome.data == Data("hello, world!".utf8))
        }
    }

    @Test func headerValuesWithLineBreaksAreRejectedBeforeSending() async throws {
        try await withServer { server in
            server.route("/h", response: .ok("x"))
            var request = URLRequest(url: server.url("/h"))
            // allHTTPHeaderFields takes values unchecked (setValue would ignore this one).
            request.allHTTPHeaderFields = ["X-Evil": "a\r\nInjected: yes"]
            let outcome = await makeSession().runDataTask(request)
            #expect(outcome.error != nil)
            #expect(server.requests.isEmpty)
        }
    }

    @Test func setValueDropsInjectionsAndLineFoldsAreSentUnfolded() async throws {
        try await withServer { server in
            server.route("/h", response: .ok("x"))
            var request = URLRequest(url: server.url("/h"))
            request.setValue("a\r\nInjected: yes", forHTTPHeaderField: "X-Evil")
            request.setValue("one\r\n two", forHTTPHeaderField: "X-Folded")
            let outcome = await makeSession().runDataTask(request)
            #expect(outcome.error == nil)
            let recorded = try #require(server.requests.first)
            #expect(recorded.header("X-Evil") == nil)
            #expect(recorded.header("Injected") == nil)
            #expect(recorded.header("X-Folded") == "one two")
        }
    }

    @Test(arguments: ["GE T", "GET\r\nX: y", "", "G\u{0}T"])
    func invalidMethodsAreRejectedBeforeSending(method: String) async throws {
        try await withServer { server in
            server.route("/m", response: .ok("x"))
            var request = URLRequest(url: server.url("/m"))
            request.httpMethod = method
            let outcome = await makeSession().runDataTask(request)
            #expect(outcome.urlError?.code == .badURL)
            #expect(server.requests.isEmpty)
        }
    }
}
