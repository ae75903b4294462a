import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import NIOConcurrencyHelpers
import Testing

/// Collects `didFinishCollecting` and the completion of each task, in order.
private final class MetricsDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    let events = NIOLockedValueBox<[String]>([])
    let metrics = NIOLockedValueBox<[Int: URLSessionTaskMetrics]>([:])
    private let completions = NIOLockedValueBox<[Int: AsyncGate]>([:])

    func gate(_ task: URLSessionTask) -> AsyncGate {
        completions.withLockedValue { gates in
            if let gate = gates[task.taskIdentifier] { return gate }
            let gate = AsyncGate()
            gates[task.taskIdentifier] = gate
            return gate
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didFinishCollecting metrics: URLSessionTaskMetrics) {
        self.metrics.withLockedValue { $0[task.taskIdentifier] = metrics }
        events.withLockedValue { $0.append("metrics \(task.taskIdentifier)") }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        events.withLockedValue { $0.append("complete \(task.taskIdentifier)") }
        gate(task).open()
    }

    /// Runs `request` as a delegate task and returns its metrics.
    func run(_ request: URLRequest, in session: URLSession) async throws -> URLSessionTaskMetrics {
        let task = session.dataTask(with: request)
        let done = gate(task)
        task.resume()
        await done.wait()
        return try #require(metrics.withLockedValue { $0[task.taskIdentifier] })
    }
}

@Suite("Task metrics")
struct TaskMetricsTests {
    /// The bytes of a request head as the server received it.
    private func headSize(_ request: RecordedRequest) -> Int64 {
        var size = "\(request.method) \(request.target) \(request.version)\r\n".utf8.count + 2
        for header in request.headers { size += header.name.utf8.count + 2 + header.value.utf8.count + 2 }
        return Int64(size)
    }

    @Test(arguments: [MockServer.Scheme.http, .https, .http2])
    func networkTransactionsAgreeWithTheServer(scheme: MockServer.Scheme) async throws {
        try await withServer(scheme) { server in
            server.route("/m", response: .ok(Data(repeating: 7, count: 1000)))
            let delegate = MetricsDelegate()
            let session = makeSession(delegate: delegate) {
                $0.courierAdditionalTrustedCertificates = [Data(server.certificateDER)]
            }
            defer { session.finishTasksAndInvalidate() }

            let first = try await delegate.run(URLRequest(url: server.url("/m")), in: session)
            let second = try await delegate.run(URLRequest(url: server.url("/m")), in: session)
            let requests = server.requests(path: "/m")
            try #require(requests.count == 2)
            #expect(requests[0].connectionID == requests[1].connectionID)

            for (index, metrics) in [first, second].enumerated() {
                #expect(metrics.redirectCount == 0)
                try #require(metrics.transactionMetrics.count == 1)
                let transaction = metrics.transactionMetrics[0]
                let recorded = requests[index]
                #expect(transaction.resourceFetchType == .networkLoad)
                #expect(transaction.networkProtocolName == (scheme == .http2 ? "h2" : "http/1.1"))
                #expect(transaction.isReusedConnection == (index == 1))
                #expect(!transaction.isProxyConnection)
                #expect((transaction.response as? HTTPURLResponse)?.statusCode == 200)
                #expect(transaction.request.url == server.url("/m"))
                #expect(transaction.remoteAddress == "127.0.0.1" && transaction.remotePort == server.port)
                #expect(transaction.localAddress == "127.0.0.1" && transaction.localPort == recorded.clientPort)
                // Dates in order, the server's receipt of the request between the request and the response.
                let fetchStart = try #require(transaction.fetchStartDate)
                let requestStart = try #require(transaction.requestStartDate)
                let requestEnd = try #require(transaction.requestEndDate)
                let responseStart = try #require(transaction.responseStartDate)
                let responseEnd = try #require(transaction.responseEndDate)
                #expect(fetchStart <= requestStart && requestStart <= requestEnd && requestEnd <= responseEnd)
                #expect(requestStart <= recorded.receivedAt && recorded.receivedAt <= responseStart)
                #expect(responseStart <= responseEnd)
                #expect(metrics.taskInterval.start <= fetchStart && responseEnd <= metrics.taskInterval.end)
                if index == 0 {
                    let connectStart = try #require(transaction.connectStartDate)
                    let connectEnd = try #require(transaction.connectEndDate)
                    #expect(fetchStart <= connectStart && connectStart <= connectEnd && connectEnd <= requestStart)
                    if scheme != .http {
                        let tlsStart = try #require(transaction.secureConnectionStartDate)
                        let tlsEnd = try #require(transaction.secureConnectionEndDate)
                        #expect(connectStart <= tlsStart && tlsStart <= tlsEnd && tlsEnd <= connectEnd)
                        #expect(transaction.negotiatedTLSProtocolVersion == .TLSv13)
                    } else {
                        #expect(transaction.secureConnectionStartDate == nil)
                        #expect(transaction.negotiatedTLSProtocolVersion == nil)
                    }
                } else {
                    #expect(transaction.connectStartDate == nil && transaction.secureConnectionStartDate == nil)
                }
                // Byte counts: the request head exactly as the server read it; the body as sent.
                #expect(transaction.countOfRequestHeaderBytesSent == headSize(recorded))
                #expect(transaction.countOfRequestBodyBytesSent == 0)
                #expect(transaction.countOfResponseBodyBytesReceived == 1000)
                #expect(transaction.countOfResponseBodyBytesAfterDecoding == 1000)
                #expect(transaction.countOfResponseHeaderBytesReceived > 30)
            }
            // didFinishCollecting comes before didCompleteWithError.
            let events = delegate.events.withLockedValue { $0 }
            try #require(events.count == 4)
            #expect(events.first?.hasPrefix("metrics") == true && events[1].hasPrefix("complete"))
        }
    }

    @Test func aRedirectIsOneTransactionMore() async throws {
        try await withServer { server in
            server.route(
                "/start",
                response: MockResponse(status: 302, headers: [("Location", "/end")], body: .data(Data("moved".utf8))))
            server.route("/end", response: .ok("end"))
            let delegate = MetricsDelegate()
            let session = makeSession(delegate: delegate)
            defer { session.finishTasksAndInvalidate() }

            let metrics = try await delegate.run(URLRequest(url: server.url("/start")), in: session)
            #expect(metrics.redirectCount == 1)
            try #require(metrics.transactionMetrics.count == 2)
            let (redirect, final) = (metrics.transactionMetrics[0], metrics.transactionMetrics[1])
            #expect((redirect.response as? HTTPURLResponse)?.statusCode == 302)
            #expect((final.response as? HTTPURLResponse)?.statusCode == 200)
            #expect(redirect.request.url == server.url("/start") && final.request.url == server.url("/end"))
            #expect(redirect.resourceFetchType == .networkLoad && final.resourceFetchType == .networkLoad)
            let start = try #require(server.requests(path: "/start").first)
            let end = try #require(server.requests(path: "/end").first)
            #expect(final.isReusedConnection == (start.connectionID == end.connectionID))
            #expect(redirect.countOfResponseBodyBytesReceived <= 5)
            #expect(try #require(redirect.fetchStartDate) <= (try #require(final.fetchStartDate)))
        }
    }

    @Test func aCacheHitIsALocalCacheTransaction() async throws {
        try await withServer { server in
            server.route(
                "/cached",
                response: MockResponse(headers: [("Cache-Control", "max-age=600")], body: .data(Data("doc".utf8))))
            let delegate = MetricsDelegate()
            let session = makeSession(delegate: delegate) {
                $0.urlCache = URLCache(memoryCapacity: 1 << 20, diskCapacity: 0)
            }
            defer { session.finishTasksAndInvalidate() }

            let network = try await delegate.run(URLRequest(url: server.url("/cached")), in: session)
            let cached = try await delegate.run(URLRequest(url: server.url("/cached")), in: session)
            #expect(server.requests(path: "/cached").count == 1)
            #expect(network.transactionMetrics.first?.resourceFetchType == .networkLoad)
            try #require(cached.transactionMetrics.count == 1)
            let hit = cached.transactionMetrics[0]
            #expect(hit.resourceFetchType == .localCache)
            #expect((hit.response as? HTTPURLResponse)?.statusCode == 200)
            #expect(hit.fetchStartDate != nil)
            #expect(hit.requestStartDate == nil && hit.networkProtocolName == nil && hit.remotePort == nil)
            #expect(hit.countOfResponseBodyBytesReceived == 0)
        }
    }

    @Test func codedAndUploadedBodiesAreCountedOnTheWireAndDecoded() async throws {
        try await withServer { server in
            let text = Data(String(repeating: "compressible text ", count: 500).utf8)
            let compressed = Deflater.compress(Array(text), as: .gzip)
            server.route(
                "/gzip", response: MockResponse(headers: [("Content-Encoding", "gzip")], body: .data(Data(compressed))))
            let delegate = MetricsDelegate()
            let session = makeSession(delegate: delegate)
            defer { session.finishTasksAndInvalidate() }

            var request = URLRequest(url: server.url("/gzip"))
            request.httpMethod = "POST"
            request.httpBody = Data(repeating: 1, count: 5000)
            let metrics = try await delegate.run(request, in: session)
            let transaction = try #require(metrics.transactionMetrics.first)
            #expect(transaction.countOfRequestBodyBytesSent == 5000)
            #expect(transaction.countOfRequestBodyBytesBeforeEncoding == 5000)
            #expect(transaction.countOfResponseBodyBytesReceived == Int64(compressed.count))
            #expect(transaction.countOfResponseBodyBytesAfterDecoding == Int64(text.count))
            let recorded = try #require(server.requests(path: "/gzip").first)
            #expect(transaction.countOfRequestHeaderBytesSent == headSize(recorded))
        }
    }

    @Test func anAsyncCallsDelegateHasTheMetricsBeforeTheCallReturns() async throws {
        try await withServer { server in
            server.route("/async", response: .ok("a"))
            let session = makeSession()
            defer { session.finishTasksAndInvalidate() }
            let delegate = MetricsDelegate()
            let (data, _) = try await session.data(from: server.url("/async"), delegate: delegate)
            #expect(data == Data("a".utf8))
            #expect(delegate.metrics.withLockedValue { $0.count } == 1)
        }
    }

    @Test func aProtocolOrDataURLIsAnUnknownFetchTypeTransaction() async throws {
        let delegate = MetricsDelegate()
        let session = makeSession(delegate: delegate)
        defer { session.finishTasksAndInvalidate() }
        let metrics = try await delegate.run(URLRequest(url: try #require(URL(string: "data:,hi"))), in: session)
        try #require(metrics.transactionMetrics.count == 1)
        #expect(metrics.transactionMetrics[0].resourceFetchType == .unknown)
        #expect(metrics.transactionMetrics[0].response?.mimeType == "text/plain")
    }
}
