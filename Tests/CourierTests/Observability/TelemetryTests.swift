import CourierMockServer
import CourierTestSupport
import Foundation
import InMemoryTracing
import Logging
import MetricsTestKit
import NIOConcurrencyHelpers
import Testing
import Tracing

@testable import Courier

/// Spans, propagation, metrics and redacted logs end to end against `CourierMockServer`, with an `InMemoryTracer`
/// and `TestMetrics` set on the session (the process-wide systems stay unbootstrapped, as other suites expect).
@Suite("Telemetry")
struct TelemetryTests {
    private func session(
        tracer: InMemoryTracer? = nil, metrics: TestMetrics? = nil, logger: Logger? = nil,
        delegate: (any URLSessionDelegate)? = nil, _ adjust: (inout CourierTelemetry) -> Void = { _ in }
    ) -> URLSession {
        makeSession(delegate: delegate) { configuration in
            var telemetry = CourierTelemetry()
            telemetry.tracer = tracer
            telemetry.metricsFactory = metrics
            telemetry.logger = logger
            adjust(&telemetry)
            configuration.courierTelemetry = telemetry
        }
    }

    private func clientSpans(_ tracer: InMemoryTracer) -> [FinishedInMemorySpan] {
        tracer.finishedSpans.filter { $0.kind == .client }
    }

    @Test func aTaskIsOneClientSpanUnderTheContextItWasMadeIn() async throws {
        try await withServer { server in
            server.route("/a", response: .ok("hello"))
            let tracer = InMemoryTracer()
            let session = session(tracer: tracer)
            defer { session.finishTasksAndInvalidate() }
            var components = try #require(URLComponents(url: server.url("/a"), resolvingAgainstBaseURL: false))
            components.user = "ada"
            components.password = "s3cret"
            components.query = "token=abc"
            let url = try #require(components.url)
            let parent = await tracer.withSpan("parent") { parent in
                // The completion-handler API, made inside the parent span.
                let outcome = await session.runDataTask(url)
                #expect(outcome.error == nil)
                return parent.context
            }
            let span = try #require(clientSpans(tracer).first)
            #expect(clientSpans(tracer).count == 1)
            #expect(span.operationName == "HTTP GET")
            #expect(span.traceID == parent.inMemorySpanContext?.traceID)
            #expect(span.parentSpanID == parent.inMemorySpanContext?.spanID)
            let attributes = span.attributes
            #expect(attributes.get("http.request.method") == .string("GET"))
            #expect(attributes.get("url.full") == .string("http://REDACTED:REDACTED@127.0.0.1:\(server.port)/a"))
            #expect(attributes.get("server.address") == .string("127.0.0.1"))
            #expect(attributes.get("server.port") == .int64(Int64(server.port)))
            #expect(attributes.get("http.response.status_code") == .int64(200))
            #expect(attributes.get("network.protocol.version") == .string("1.1"))
            #expect(attributes.get("http.response.body.size") == .int64(5))
            #expect(attributes.get("http.request.resend_count") == nil)
            #expect(span.status == nil)
        }
    }

    @Test func theAsyncAPIsSpanHasTheCallersParentAndTheQueryWhenAllowed() async throws {
        try await withServer { server in
            server.route("/q", response: .ok("x"))
            let tracer = InMemoryTracer()
            let session = session(tracer: tracer) { $0.recordsURLQuery = true }
            defer { session.finishTasksAndInvalidate() }
            let parentID = try await tracer.withSpan("caller") { parent in
                _ = try await session.data(from: server.url("/q?page=2"))
                return parent.context.inMemorySpanContext?.spanID
            }
            let span = try #require(clientSpans(tracer).first)
            #expect(span.parentSpanID == parentID)
            #expect(span.attributes.get("url.full") == .string("http://127.0.0.1:\(server.port)/q?page=2"))
        }
    }

    @Test func propagationHeadersGoOutOnEveryAttemptAndRedirectsAreEvents() async throws {
        try await withServer { server in
            server.route("/from", response: MockResponse(status: 302, headers: [("Location", "/to")]))
            server.route("/to", response: .ok("arrived"))
            let tracer = InMemoryTracer()
            let session = session(tracer: tracer)
            defer { session.finishTasksAndInvalidate() }
            #expect(await session.runDataTask(server.url("/from")).error == nil)
            let span = try #require(clientSpans(tracer).first)
            let sent = server.requests.map { $0.header(InMemoryTracer.traceIDKey) }
            #expect(sent == [span.traceID, span.traceID])
            #expect(server.requests.map { $0.header(InMemoryTracer.spanIDKey) } == [span.spanID, span.spanID])
            #expect(span.attributes.get("http.request.resend_count") == .int64(1))
            #expect(span.events.map(\.name) == ["http.redirect"])
            #expect(span.events.first?.attributes.get("url.full") == .string("http://127.0.0.1:\(server.port)/to"))
        }
    }

    @Test func propagationCanBeTurnedOffAndAnAppsTraceparentIsKept() async throws {
        try await withServer { server in
            server.route("/p", response: .ok("p"))
            let tracer = InMemoryTracer()
            let off = session(tracer: tracer) { $0.propagatesTraceContext = false }
            defer { off.finishTasksAndInvalidate() }
            #expect(await off.runDataTask(server.url("/p")).error == nil)
            let on = session(tracer: tracer)
            defer { on.finishTasksAndInvalidate() }
            var request = URLRequest(url: server.url("/p"))
            let own = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
            request.setValue(own, forHTTPHeaderField: "traceparent")
            #expect(await on.runDataTask(request).error == nil)
            #expect(server.requests.map { $0.header(InMemoryTracer.traceIDKey) } == [nil, nil])
            #expect(server.requests.last?.header("traceparent") == own)
            // Both tasks still have their spans.
            #expect(clientSpans(tracer).count == 2)
        }
    }

    @Test func anAuthenticationRetryIsAnEventAndAResend() async throws {
        try await withServer { server in
            server.protect("/vault", user: "ada", password: "pw", realm: "vault", response: .ok("gold"))
            let tracer = InMemoryTracer()
            let delegate = ChallengeAnsweringDelegate([
                (.useCredential, URLCredential(user: "ada", password: "pw", persistence: .none))
            ])
            let session = session(tracer: tracer, delegate: delegate)
            defer { session.finishTasksAndInvalidate() }
            #expect(await session.runDataTask(server.url("/vault")).data == Data("gold".utf8))
            let span = try #require(clientSpans(tracer).first)
            #expect(span.events.map(\.name) == ["http.auth_challenge"])
            #expect(span.events.first?.attributes.get("courier.auth.realm") == .string("vault"))
            #expect(span.attributes.get("http.request.resend_count") == .int64(1))
            #expect(span.attributes.get("http.response.status_code") == .int64(200))
        }
    }

    @Test func failuresAndErrorStatusesMarkTheSpan() async throws {
        let tracer = InMemoryTracer()
        let session = session(tracer: tracer)
        defer { session.finishTasksAndInvalidate() }
        try await withServer { server in
            server.route("/missing", response: MockResponse(status: 404))
            #expect(await session.runDataTask(server.url("/missing")).error == nil)
        }
        let refusing = try RefusingPort()
        let failed = await session.runDataTask(try #require(URL(string: "http://127.0.0.1:\(refusing.port)/")))
        withExtendedLifetime(refusing) {}
        #expect(failed.urlError?.code == .cannotConnectToHost)
        let spans = clientSpans(tracer)
        #expect(spans.count == 2)
        let notFound = try #require(spans.first { $0.attributes.get("http.response.status_code") == .int64(404) })
        #expect(notFound.attributes.get("error.type") == .string("404"))
        #expect(notFound.status?.code == .error)
        let refused = try #require(spans.first { $0.attributes.get("http.response.status_code") == nil })
        #expect(refused.attributes.get("error.type") == .string("cannotConnectToHost"))
        #expect(refused.status?.code == .error)
        #expect(refused.errors.count == 1)
    }

    /// Tracers export a recorded error's description as `exception.message` (swift-otel does), and a `URLError`'s
    /// description prints its user info: the failing URL in it is redacted as `url.full` is.
    @Test func theRecordedErrorCarriesNeitherCredentialsNorTheQuery() async throws {
        let tracer = InMemoryTracer()
        let session = session(tracer: tracer)
        defer { session.finishTasksAndInvalidate() }
        let refusing = try RefusingPort()
        let url = try #require(
            URL(string: "http://ada:URLPASSWORDSECRET@127.0.0.1:\(refusing.port)/a?token=QUERYSECRET"))
        let failed = await session.runDataTask(url)
        withExtendedLifetime(refusing) {}
        #expect(failed.urlError?.code == .cannotConnectToHost)
        let span = try #require(clientSpans(tracer).first)
        let recorded = try #require(span.errors.first)
        let message = String(describing: recorded.error)
        #expect(!message.contains("URLPASSWORDSECRET"), "\(message)")
        #expect(!message.contains("QUERYSECRET"), "\(message)")
        #expect((recorded.error as? URLError)?.code == .cannotConnectToHost)
        #expect(
            ((recorded.error as? URLError)?.userInfo[NSURLErrorFailingURLErrorKey] as? URL)?.absoluteString
                == "http://REDACTED:REDACTED@127.0.0.1:\(refusing.port)/a")
    }

    @Test func metricsCountRequestsBytesConnectionsAndTheCache() async throws {
        let metrics = TestMetrics()
        try await withServer { server in
            server.route(
                "/ok", response: MockResponse(headers: [("Cache-Control", "max-age=600")], body: .data(Data("ok".utf8)))
            )
            server.route("/missing", response: MockResponse(status: 404))
            let session = session(metrics: metrics) { $0.metricsIncludeHost = true }
            session.configuration.urlCache = URLCache(memoryCapacity: 1 << 20, diskCapacity: 0)
            defer { session.finishTasksAndInvalidate() }
            #expect(await session.runDataTask(server.url("/ok")).error == nil)
            #expect(await session.runDataTask(server.url("/ok")).error == nil)  // from the cache
            #expect(await session.runDataTask(server.url("/missing")).error == nil)
        }
        let refusing = try RefusingPort()
        let failing = session(metrics: metrics)
        defer { failing.finishTasksAndInvalidate() }
        _ = await failing.runDataTask(try #require(URL(string: "http://127.0.0.1:\(refusing.port)/")))
        withExtendedLifetime(refusing) {}

        let withHost = [("method", "GET"), ("scheme", "http"), ("host", "127.0.0.1")]
        #expect(try metrics.expectCounter(SessionMetrics.Name.requestsStarted, withHost).totalValue == 3)
        #expect(
            try metrics.expectCounter(SessionMetrics.Name.requestsCompleted, withHost + [("status_class", "2xx")])
                .totalValue == 2)
        #expect(
            try metrics.expectCounter(SessionMetrics.Name.requestsCompleted, withHost + [("status_class", "4xx")])
                .totalValue == 1)
        let failed = [("method", "GET"), ("scheme", "http"), ("error", "cannotConnectToHost")]
        #expect(try metrics.expectCounter(SessionMetrics.Name.requestsFailed, failed).totalValue == 1)
        #expect(try metrics.expectTimer(SessionMetrics.Name.timeToFirstByte, withHost).values.count == 3)
        #expect(
            try metrics.expectTimer(SessionMetrics.Name.requestDuration, withHost + [("outcome", "2xx")]).values.count
                == 2)
        let connection = [("scheme", "http"), ("protocol", "http/1.1")]
        #expect(try metrics.expectCounter(SessionMetrics.Name.connectionsOpened, connection).totalValue == 1)
        #expect(try metrics.expectCounter(SessionMetrics.Name.connectionsReused, connection).totalValue == 1)
        #expect(try metrics.expectCounter(SessionMetrics.Name.bytesReceived, [("scheme", "http")]).totalValue > 2)
        #expect(try metrics.expectCounter(SessionMetrics.Name.bytesSent, [("scheme", "http")]).totalValue > 0)
        #expect(try metrics.expectCounter(SessionMetrics.Name.cacheLookups, [("result", "hit")]).totalValue == 1)
        // The first request, the 404 and the refused one (whose session has the ephemeral memory cache) missed.
        #expect(try metrics.expectCounter(SessionMetrics.Name.cacheLookups, [("result", "miss")]).totalValue == 3)
    }

    @Test func poolGaugesFollowTheConnectionsAndTheQueue() async throws {
        let metrics = TestMetrics()
        func gauge(_ state: String) -> Double? {
            try? metrics.expectMeter(SessionMetrics.Name.connections, [("state", state)]).lastValue
        }
        func queued() -> Double? { try? metrics.expectMeter(SessionMetrics.Name.requestsQueued).lastValue }
        try await withServer { server in
            // An answer that takes 30 s: the queue stays while the test looks, however loaded the machine.
            server.route("/slow", response: .delayed("late", by: .seconds(30)))
            server.route("/quick", response: .ok("quick"))
            let session = makeSession { configuration in
                configuration.httpMaximumConnectionsPerHost = 1
                configuration.courierTelemetry.metricsFactory = metrics
            }
            let url = server.url("/slow")
            let tasks = (0..<3).map { _ in session.dataTask(with: url) }
            for task in tasks { task.resume() }
            // One connection runs a request while two wait for it.
            try await waitUntil { queued() == 2 }
            #expect((gauge("busy") ?? 0) + (gauge("connecting") ?? 0) == 1)
            for task in tasks { task.cancel() }
            try await waitUntil { queued() == 0 && gauge("busy") == 0 }
            // A finished request leaves its connection idle until the session goes.
            #expect(await session.runDataTask(server.url("/quick")).error == nil)
            try await waitUntil { gauge("idle") == 1 }
            session.invalidateAndCancel()
            try await waitUntil { gauge("idle") == 0 }
        }
    }

    @Test func aDownloadIsActiveWhileItRuns() async throws {
        let metrics = TestMetrics()
        try await withServer { server in
            var slow = MockResponse(body: .pattern(length: 200_000))
            slow.chunkSize = 10_000
            slow.chunkDelay = .milliseconds(20)
            server.route("/big", response: slow)
            let session = session(metrics: metrics)
            defer { session.finishTasksAndInvalidate() }
            let task = session.downloadTask(with: server.url("/big"))
            task.resume()
            try await waitUntil {
                (try? metrics.expectMeter(SessionMetrics.Name.downloadsActive).lastValue) == 1
            }
            try await waitUntil { task.state == .completed }
            #expect(try metrics.expectMeter(SessionMetrics.Name.downloadsActive).lastValue == 0)
        }
    }

    @Test func nothingIsRecordedWhenNothingIsBootstrapped() {
        let session = makeSession()
        defer { session.finishTasksAndInvalidate() }
        #expect(!session.telemetry.isActive)
        #expect(session.telemetry.tracer == nil && session.telemetry.metrics == nil)
    }

    @Test func noSecretReachesALogHandlerAtAnyLevel() async throws {
        let records = LogRecords()
        var logger = Logger(label: "courier.test") { _ in CapturingLogHandler(records: records) }
        logger.logLevel = .trace
        let tracer = InMemoryTracer()
        try await withServer { server in
            server.route(
                "/secret",
                response: MockResponse(
                    headers: [("Set-Cookie", "session=SETCOOKIESECRET; Path=/")], body: .data(Data("s".utf8))))
            let session = session(tracer: tracer, logger: logger)
            defer { session.finishTasksAndInvalidate() }
            var components = try #require(URLComponents(url: server.url("/secret"), resolvingAgainstBaseURL: false))
            components.user = "ada"
            components.password = "URLPASSWORDSECRET"
            var request = URLRequest(url: try #require(components.url))
            request.setValue("Bearer AUTHSECRET", forHTTPHeaderField: "Authorization")
            request.setValue("Basic PROXYSECRET", forHTTPHeaderField: "Proxy-Authorization")
            request.setValue("id=COOKIESECRET", forHTTPHeaderField: "Cookie")
            #expect(await session.runDataTask(request).error == nil)
            // The server did get them: the log is the only place they must not reach.
            #expect(server.requests.first?.header("Authorization") == "Bearer AUTHSECRET")
        }
        let all = records.all
        let text = all.map { "\($0.message) \($0.metadata)" }.joined(separator: "\n")
        for secret in ["AUTHSECRET", "PROXYSECRET", "COOKIESECRET", "SETCOOKIESECRET", "URLPASSWORDSECRET"] {
            #expect(!text.contains(secret), "\(secret) reached a log handler")
        }
        // Not vacuous: the heads were logged, with the task's identifiers and trace id.
        let heads = all.filter { $0.message == "request head" || $0.message == "response head" }
        #expect(heads.count == 2)
        #expect(text.contains("Authorization: <redacted>"))
        #expect(text.contains("Set-Cookie: <redacted>"))
        let traceID = try #require(clientSpans(tracer).first?.traceID)
        for head in heads {
            #expect(head.metadata["courier.task"] != nil && head.metadata["courier.session"] != nil)
            #expect(head.metadata["trace_id"] == .string(traceID))
        }
    }
}

/// Log records, in order.
final class LogRecords: Sendable {
    struct Record: Sendable {
        var level: Logger.Level
        var message: String
        var metadata: Logger.Metadata
    }

    private let records = NIOLockedValueBox<[Record]>([])
    var all: [Record] { records.withLockedValue { $0 } }
    func append(_ record: Record) { records.withLockedValue { $0.append(record) } }
}

/// A log handler that keeps every record, with its metadata merged as swift-log would print it.
struct CapturingLogHandler: LogHandler {
    let records: LogRecords
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        records.append(LogRecords.Record(level: event.level, message: "\(event.message)", metadata: merged))
    }
}

@Suite("Session logger metadata")
struct SessionLoggerMetadataTests {
    /// The session's metadata goes on a logger that lets debug lines out (Courier's lines are all debug or trace);
    /// one above that level prints none of them and is spared the handler's rendering of the metadata.
    @Test(arguments: [(Logger.Level.debug, true), (.trace, true), (.info, false), (.error, false)])
    func theSessionMetadataGoesOnLoggersThatPrintDebugLines(level: Logger.Level, tagged: Bool) {
        var logger = Logger(label: "courier-test")
        logger.logLevel = level
        var options = CourierTelemetry()
        options.logger = logger
        let telemetry = SessionTelemetry(options: options)
        #expect((telemetry.logger[metadataKey: "courier.session"] != nil) == tagged)
        #expect(telemetry.logger.logLevel == level)
    }
}
