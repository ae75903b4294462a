import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import NIOConcurrencyHelpers
import NIOHTTP2
import Testing

/// HTTP/2 end to end: ALPN, one connection carrying many streams, the server's stream limit, per-stream cancel and
/// backpressure, and `GOAWAY`/`RST_STREAM` handling. The suites tagged with ``WireProtocol`` run everything above
/// HTTP over h2 as well.
@Suite("HTTP/2")
struct HTTP2Tests {
    /// Runs `body` against an `.http2` server with `settings`.
    private func withH2Server(
        _ settings: MockHTTP2Settings = MockHTTP2Settings(), _ body: (MockServer) async throws -> Void
    ) async throws {
        let server = MockServer(scheme: .http2, tlsIdentity: SharedTestTLS.serverIdentity, http2Settings: settings)
        try await server.start()
        do {
            try await body(server)
            try await server.shutdown()
        } catch {
            try? await server.shutdown()
            throw error
        }
    }

    @Test func httpsNegotiatesH2AndPlainHTTPStaysHTTP1() async throws {
        try await withH2Server { server in
            server.route("/hello", response: .ok("over h2"))
            let session = makeSession()
            defer { session.finishTasksAndInvalidate() }
            let outcome = await session.runDataTask(server.url("/hello"))
            #expect(outcome.error == nil)
            #expect(outcome.data == Data("over h2".utf8))
            #expect(outcome.http?.statusCode == 200)
            #expect(outcome.http?.value(forHTTPHeaderField: "Content-Type") == "text/plain; charset=utf-8")
            #expect(server.requests.first?.protocolName == "h2")
        }
        try await withServer(.http) { server in
            server.route("/hello", response: .ok("over 1.1"))
            let session = makeSession()
            defer { session.finishTasksAndInvalidate() }
            _ = await session.runDataTask(server.url("/hello"))
            #expect(server.requests.first?.protocolName == "http/1.1")
        }
    }

    @Test func aServerThatOffersOnlyHTTP1GetsHTTP1OverTLS() async throws {
        try await withServer(.https, tlsIdentity: SharedTestTLS.serverIdentity) { server in
            server.route("/hello", response: .ok("1.1"))
            let session = makeSession()
            defer { session.finishTasksAndInvalidate() }
            let outcome = await session.runDataTask(server.url("/hello"))
            #expect(outcome.data == Data("1.1".utf8))
            #expect(server.requests.first?.protocolName == "http/1.1")
        }
    }

    @Test func concurrentRequestsShareOneConnectionOnStreamsOfTheirOwn() async throws {
        try await withH2Server { server in
            server.route("/slow", response: .delayed("s", by: .milliseconds(200)))
            server.route("/warm", response: .ok("w"))
            let session = makeSession()
            defer { session.finishTasksAndInvalidate() }
            // The first request learns that the origin speaks h2; the rest then join its connection.
            _ = await session.runDataTask(server.url("/warm"))
            let outcomes = await withTaskGroup(of: DataOutcome.self) { group in
                for _ in 0..<20 { group.addTask { await session.runDataTask(server.url("/slow")) } }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(outcomes.allSatisfy { $0.data == Data("s".utf8) })
            let requests = server.requests
            #expect(Set(requests.map(\.connectionID)).count == 1)
            #expect(Set(requests.compactMap(\.streamID)).count == 21)
            #expect(server.connectionCount == 1)
        }
    }

    @Test func aFirstBurstOfRequestsOpensOneConnectionNotOneEach() async throws {
        try await withH2Server { server in
            server.route("/slow", response: .delayed("s", by: .milliseconds(100)))
            let session = makeSession { $0.httpMaximumConnectionsPerHost = 64 }
            defer { session.finishTasksAndInvalidate() }
            let outcomes = await withTaskGroup(of: DataOutcome.self) { group in
                for _ in 0..<32 { group.addTask { await session.runDataTask(server.url("/slow")) } }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(outcomes.allSatisfy { $0.data == Data("s".utf8) })
            #expect(server.connectionCount == 1)
        }
    }

    @Test func theServersStreamLimitQueuesTheRestOnOneConnection() async throws {
        try await withH2Server(MockHTTP2Settings(maxConcurrentStreams: 2)) { server in
            server.route("/slow", response: .delayed("s", by: .milliseconds(150)))
            let session = makeSession { $0.httpMaximumConnectionsPerHost = 1 }
            defer { session.finishTasksAndInvalidate() }
            let start = ContinuousClock.now
            let outcomes = await withTaskGroup(of: DataOutcome.self) { group in
                for _ in 0..<6 { group.addTask { await session.runDataTask(server.url("/slow")) } }
                return await group.reduce(into: []) { $0.append($1) }
            }
            let elapsed = ContinuousClock.now - start
            // No stream was refused (all succeeded) and none ran beyond the limit: three rounds of two.
            #expect(outcomes.allSatisfy { $0.error == nil && $0.data == Data("s".utf8) })
            #expect(server.connectionCount == 1)
            #expect(elapsed >= .milliseconds(450))
        }
    }

    @Test func cancellingOneStreamLeavesTheOthersRunning() async throws {
        try await withH2Server { server in
            var slow = MockResponse.ok(Data(repeating: 1, count: 256 * 1024))
            slow.chunkSize = 1024
            slow.chunkDelay = .milliseconds(20)
            server.route("/slow", response: slow)
            server.route("/quick", response: .delayed("q", by: .milliseconds(300)))
            let session = makeSession()
            defer { session.finishTasksAndInvalidate() }
            _ = await session.runDataTask(server.url("/quick"))
            let doomed = session.dataTask(with: server.url("/slow"))
            doomed.resume()
            async let survivor = session.runDataTask(server.url("/quick"))
            try await Task.sleep(for: .milliseconds(100))
            doomed.cancel()
            let outcome = await survivor
            #expect(outcome.error == nil && outcome.data == Data("q".utf8))
            #expect(Set(server.requests.map(\.connectionID)).count == 1)
            // The connection is still good for the next request.
            let after = await session.runDataTask(server.url("/quick"))
            #expect(after.data == Data("q".utf8))
            #expect(server.connectionCount == 1)
        }
    }

    @Test func aSuspendedTaskStallsOnlyItsOwnStream() async throws {
        try await withH2Server { server in
            // 16 MiB in 64 KiB pieces 32 ms apart (about 8 s). The delegate suspends the task as the first bytes
            // arrive, on the delegate queue, so the suspension lands mid-body even when the test's own thread is
            // starved (a fresh-clone run once suspended from here only after the whole body had come).
            var big = MockResponse.ok(Data(repeating: 2, count: 16 << 20))
            big.chunkSize = 64 << 10
            big.chunkDelay = .milliseconds(32)
            server.route("/big", response: big)
            server.route("/small", response: .ok("small"))
            let delegate = RecordingDelegate()
            let suspended = delegate.suspendingAtFirstData()
            let session = makeSession(delegate: delegate)
            defer { session.invalidateAndCancel() }
            // A completion-handler task's bytes never reach the delegate: its body holds the big task's alone.
            _ = await session.runDataTask(server.url("/small"))
            let bigTask = session.dataTask(with: server.url("/big"))
            bigTask.resume()
            await suspended.wait()
            // The stalled stream holds back no other: small requests on the same connection complete.
            for _ in 0..<3 {
                let outcome = await session.runDataTask(server.url("/small"))
                #expect(outcome.data == Data("small".utf8))
            }
            #expect(Set(server.requests.map(\.connectionID)).count == 1)
            // The big task neither finished nor failed meanwhile: it waits, suspended, on its own stream.
            #expect(bigTask.state == .suspended)
            #expect(delegate.body.count < 16 << 20)
            bigTask.resume()
            // The task's state turns `.completed` when the engine finishes it, before the delegate queue has run
            // the last `didReceive(data:)` calls queued ahead of `didCompleteWithError` (as on Darwin); the body
            // is whole once that completion has come.
            try await waitUntil { bigTask.state == .completed }
            await delegate.waitForCompletions()
            #expect(bigTask.error == nil)
            #expect(delegate.body.count == 16 << 20)
        }
    }

    @Test(arguments: ["GET", "POST"])
    func streamsAGoAwayLeftUnprocessedAreRetriedOnANewConnection(method: String) async throws {
        try await withH2Server { server in
            var goAway = MockResponse.ok("never")
            goAway.http2Misbehaviour = .goAway(errorCode: .noError)
            server.enqueue(goAway, .ok("second connection"))
            let session = makeSession()
            defer { session.finishTasksAndInvalidate() }
            var request = URLRequest(url: server.url("/x"))
            request.httpMethod = method
            if method == "POST" { request.httpBody = Data("body".utf8) }
            let outcome = await session.runDataTask(request)
            #expect(outcome.error == nil)
            #expect(outcome.data == Data("second connection".utf8))
            let requests = server.requests
            try #require(requests.count == 2)
            #expect(requests[0].connectionID != requests[1].connectionID)
            #expect(requests[1].body == request.httpBody ?? Data())
        }
    }

    /// A server shutting down or at its connection limit may send GOAWAY right behind its first SETTINGS, read in the
    /// same turn of the loop, before the pool has the connection: no stream was processed, so the request goes to a
    /// new connection whatever its method (RFC 9113 §8.7), instead of failing with `networkConnectionLost`.
    @Test(arguments: ["GET", "POST"])
    func aGoAwayWithTheFirstSettingsSendsTheRequestToANewConnection(method: String) async throws {
        try await withH2Server { server in
            server.goAwayWithSettings(onNext: 1)
            server.route("/g", response: .ok("second connection"))
            let session = makeSession()
            defer { session.finishTasksAndInvalidate() }
            var request = URLRequest(url: server.url("/g"))
            request.httpMethod = method
            if method == "POST" { request.httpBody = Data("body".utf8) }
            let outcome = await session.runDataTask(request)
            #expect(outcome.error == nil, "\(String(describing: outcome.error))")
            #expect(outcome.data == Data("second connection".utf8))
            #expect(server.connectionCount == 2)
            let requests = server.requests
            try #require(requests.count == 1)
            #expect(requests[0].body == request.httpBody ?? Data())
        }
    }

    @Test func aGracefulGoAwaySendsLaterRequestsToANewConnection() async throws {
        try await withH2Server { server in
            var last = MockResponse.ok("first")
            last.http2Misbehaviour = .goAwayAfterResponse
            server.enqueue(last, .ok("second"))
            let session = makeSession()
            defer { session.finishTasksAndInvalidate() }
            let first = await session.runDataTask(server.url("/a"))
            let second = await session.runDataTask(server.url("/b"))
            #expect(first.data == Data("first".utf8))
            #expect(second.data == Data("second".utf8))
            let requests = server.requests
            try #require(requests.count == 2)
            #expect(requests[0].connectionID != requests[1].connectionID)
        }
    }

    @Test func aRefusedStreamIsRetriedAndAResetOneFails() async throws {
        try await withH2Server { server in
            var refused = MockResponse.ok("")
            refused.http2Misbehaviour = .resetStream(errorCode: .refusedStream)
            server.enqueue(refused, .ok("retried"))
            let session = makeSession()
            defer { session.finishTasksAndInvalidate() }
            var request = URLRequest(url: server.url("/r"))
            request.httpMethod = "POST"
            request.httpBody = Data("once".utf8)
            let outcome = await session.runDataTask(request)
            #expect(outcome.data == Data("retried".utf8))

            var reset = MockResponse.ok("")
            reset.http2Misbehaviour = .resetStream(errorCode: .internalError)
            server.enqueue(reset)
            let failed = await session.runDataTask(server.url("/r"))
            #expect(failed.urlError?.code == .networkConnectionLost)
            // The connection's other streams are unaffected: the next request works on it.
            server.enqueue(.ok("fine"))
            let next = await session.runDataTask(server.url("/r"))
            #expect(next.data == Data("fine".utf8))
        }
    }

    /// `courierAllowsHTTP2 = false` offers only `http/1.1`: an h2 server then speaks HTTP/1.1 (`courier --http1.1`).
    @Test(arguments: [true, false])
    func allowsHTTP2DecidesTheOffer(allowed: Bool) async throws {
        try await withH2Server { server in
            server.route("/v", response: .ok("v"))
            let collected = MetricsCollector()
            let session = makeSession(delegate: collected) { $0.courierAllowsHTTP2 = allowed }
            defer { session.finishTasksAndInvalidate() }
            #expect(session.configuration.courierAllowsHTTP2 == allowed)
            let (data, _) = try await session.data(from: server.url("/v"))
            #expect(data == Data("v".utf8))
            let transaction = try #require(collected.last?.transactionMetrics.last)
            #expect(transaction.networkProtocolName == (allowed ? "h2" : "http/1.1"))
        }
    }

    @Test func metricsNameTheProtocol() async throws {
        try await withH2Server { server in
            server.route("/m", response: .ok("m"))
            let collected = MetricsCollector()
            let session = makeSession(delegate: collected)
            defer { session.finishTasksAndInvalidate() }
            _ = try await session.data(from: server.url("/m"))
            _ = try await session.data(from: server.url("/m"))
            let transaction = try #require(collected.last?.transactionMetrics.last)
            #expect(transaction.networkProtocolName == "h2")
            #expect(transaction.isReusedConnection)
            #expect(transaction.negotiatedTLSProtocolVersion != nil)
        }
    }
}

/// Keeps the last metrics a session's tasks reported.
private final class MetricsCollector: NSObject, URLSessionTaskDelegate, Sendable {
    private let metrics = NIOLockedValueBox<URLSessionTaskMetrics?>(nil)

    var last: URLSessionTaskMetrics? { metrics.withLockedValue { $0 } }

    func urlSession(_ session: URLSession, task: URLSessionTask, didFinishCollecting metrics: URLSessionTaskMetrics) {
        self.metrics.withLockedValue { $0 = metrics }
    }
}
