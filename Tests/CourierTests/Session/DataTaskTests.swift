import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

@Suite("Data tasks end to end")
struct DataTaskTests {
    @Test(arguments: WireProtocol.allCases)
    func completionHandlerGetsBodyAndResponseOnDelegateQueue(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            server.route("/hello", response: .ok("hello, courier"))
            let session = makeSession()
            let outcome = await session.runDataTask(server.url("/hello"))
            #expect(outcome.error == nil)
            #expect(outcome.data == Data("hello, courier".utf8))
            #expect(outcome.http?.statusCode == 200)
            #expect(outcome.http?.value(forHTTPHeaderField: "content-type") == "text/plain; charset=utf-8")
            #expect(outcome.http?.expectedContentLength == 14)
            #expect(outcome.http?.mimeType == "text/plain")
            #expect(outcome.http?.textEncodingName == "utf-8")
            #expect(outcome.onDelegateQueue)
            session.finishTasksAndInvalidate()
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func httpErrorStatusIsAResponseNotAnError(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            server.route("/missing", response: MockResponse(status: 404, body: .data(Data("nope".utf8))))
            let outcome = await makeSession().runDataTask(server.url("/missing"))
            #expect(outcome.error == nil)
            #expect(outcome.http?.statusCode == 404)
            #expect(outcome.data == Data("nope".utf8))
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func requestCarriesMethodHeadersBodyAndDefaults(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            server.route("/echo", method: "POST", response: .status(201))
            let session = makeSession { configuration in
                configuration.httpAdditionalHeaders = [
                    "X-Session": "session", "X-Both": "from-session", "Authorization": "Bearer session", "Host": "evil",
                ]
            }
            var request = URLRequest(url: server.url("/echo?q=1"))
            request.httpMethod = "POST"
            request.httpBody = Data("payload".utf8)
            request.setValue("from-request", forHTTPHeaderField: "x-both")
            request.addValue("a", forHTTPHeaderField: "X-List")
            request.addValue("b", forHTTPHeaderField: "X-List")
            let outcome = await session.runDataTask(request)
            #expect(outcome.http?.statusCode == 201)
            let recorded = try #require(server.requests(path: "/echo").first)
            #expect(recorded.method == "POST")
            #expect(recorded.target == "/echo?q=1")
            #expect(recorded.body == Data("payload".utf8))
            #expect(recorded.header("Content-Length") == "7")
            #expect(recorded.header("X-Session") == "session")
            #expect(recorded.header("X-Both") == "from-request")
            #expect(recorded.header("X-List") == "a,b")
            #expect(recorded.header("Authorization") == "Bearer session")  // as on Darwin
            #expect(recorded.header("Host") == "127.0.0.1:\(server.port)")
            #expect(recorded.header("Accept-Encoding") == "gzip, deflate, br")
            #expect(recorded.header("User-Agent")?.isEmpty == false)
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func chunkedHeadNoContentAndNotModifiedBodies(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            var chunked = MockResponse.ok(Data(repeating: 7, count: 100_000))
            chunked.chunked = true
            chunked.chunkSize = 4096
            server.route("/chunked", response: chunked)
            server.route("/head", response: .ok("body that HEAD must not read"))
            server.route("/204", response: .status(204))
            server.route("/304", response: .status(304))
            let session = makeSession()
            let chunkedOutcome = await session.runDataTask(server.url("/chunked"))
            #expect(chunkedOutcome.data == Data(repeating: 7, count: 100_000))
            #expect(chunkedOutcome.http?.expectedContentLength == -1)
            var head = URLRequest(url: server.url("/head"))
            head.httpMethod = "HEAD"
            let headOutcome = await session.runDataTask(head)
            #expect(headOutcome.data == Data())
            #expect(headOutcome.http?.expectedContentLength == 28)
            #expect(await session.runDataTask(server.url("/204")).http?.statusCode == 204)
            #expect(await session.runDataTask(server.url("/304")).http?.statusCode == 304)
            // All on one keep-alive connection.
            #expect(server.connectionCount == 1)
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func gzipBodiesAreDecoded(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            // gzip of "hello gzip hello gzip hello gzip\n", made with Python's gzip module.
            let gzip: [UInt8] = [
                0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x03, 0xcb, 0x48, 0xcd, 0xc9, 0xc9, 0x57,
                0x48, 0xaf, 0xca, 0x2c, 0x50, 0xc8, 0xc0, 0xc6, 0xe4, 0x02, 0x00, 0xf4, 0x08, 0xa4, 0xd1, 0x21,
                0x00, 0x00, 0x00,
            ]
            server.route(
                "/gz",
                response: MockResponse(
                    headers: [("Content-Encoding", "gzip"), ("Content-Type", "text/plain")],
                    body: .data(Data(gzip))
                )
            )
            let outcome = await makeSession().runDataTask(server.url("/gz"))
            #expect(outcome.error == nil)
            #expect(String(decoding: outcome.data ?? Data(), as: UTF8.self) == "hello gzip hello gzip hello gzip\n")
        }
    }

    @Test func ipv6LiteralURLs() async throws {
        try await withServer(host: "::1") { server in
            server.route("/six", response: .ok("over ipv6"))
            let url = try #require(URL(string: "http://[::1]:\(server.port)/six"))
            let outcome = await makeSession().runDataTask(url)
            #expect(outcome.data == Data("over ipv6".utf8))
            #expect(server.requests.first?.header("Host") == "[::1]:\(server.port)")
        }
    }

    /// A URL's IPv6 zone (`%251`: interface 1, the loopback on Linux) picks the interface to connect through and is
    /// not sent: the `Host` field names the address alone (RFC 6874 §4).
    @Test func anIPv6ZoneConnectsButIsNotSent() async throws {
        try await withServer(host: "::1") { server in
            server.route("/zone", response: .ok("zoned"))
            let url = try #require(URL(string: "http://[::1%251]:\(server.port)/zone"))
            let outcome = await makeSession().runDataTask(url)
            #expect(outcome.data == Data("zoned".utf8))
            #expect(server.requests.first?.header("Host") == "[::1]:\(server.port)")
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func keepAliveReusesOneConnection(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            server.route("/k", response: .ok("k"))
            let session = makeSession()
            for _ in 0..<5 {
                #expect(await session.runDataTask(server.url("/k")).data == Data("k".utf8))
            }
            #expect(server.connectionCount == 1)
            #expect(Set(server.requests.map(\.connectionID)).count == 1)
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func connectionsPerHostAreLimitedAndRequestsQueue(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            server.route("/slow", response: .delayed("slow", by: .milliseconds(150)))
            let session = makeSession { $0.httpMaximumConnectionsPerHost = 2 }
            let outcomes = await withTaskGroup(of: DataOutcome.self) { group in
                for _ in 0..<6 {
                    group.addTask { await session.runDataTask(server.url("/slow")) }
                }
                var all: [DataOutcome] = []
                for await outcome in group { all.append(outcome) }
                return all
            }
            #expect(outcomes.allSatisfy { $0.data == Data("slow".utf8) })
            // HTTP/1.1 runs one request per connection, up to the limit; HTTP/2 runs them all on streams of one.
            #expect(server.connectionCount == (wire == .http1 ? 2 : 1))
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func serverClosingAnIdleKeepAliveConnectionIsRetriedTransparently(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            var closing = MockResponse.ok("first")
            closing.closeConnection = true
            server.enqueue(closing, .ok("second"))
            let session = makeSession()
            #expect(await session.runDataTask(server.url("/a")).data == Data("first".utf8))
            try await Task.sleep(for: .milliseconds(50))
            #expect(await session.runDataTask(server.url("/b")).data == Data("second".utf8))
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func redirectsAreFollowedWithMethodRewriting(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            server.route("/old", method: "POST", response: MockResponse(status: 302, headers: [("Location", "/new")]))
            server.route("/new", response: .ok("moved"))
            var request = URLRequest(url: server.url("/old"))
            request.httpMethod = "POST"
            request.httpBody = Data("x".utf8)
            let outcome = await makeSession().runDataTask(request)
            #expect(outcome.data == Data("moved".utf8))
            #expect(outcome.response?.url?.path == "/new")
            let followed = try #require(server.requests(path: "/new").first)
            #expect(followed.method == "GET")
            #expect(followed.bodyLength == 0)
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func delegateCanRefuseARedirect(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            server.route("/old", response: MockResponse(status: 301, headers: [("Location", "/new")]))
            server.route("/new", response: .ok("moved"))
            let delegate = RecordingDelegate()
            delegate.followRedirects = false
            let session = makeSession(delegate: delegate)
            session.dataTask(with: server.url("/old")).resume()
            await delegate.waitForCompletions()
            #expect(delegate.events.contains(.redirect("/new")))
            #expect(delegate.events.contains(.response(301)))
            #expect(server.requests(path: "/new").isEmpty)
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func tooManyRedirectsFail(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            server.route("/loop", response: MockResponse(status: 302, headers: [("Location", "/loop")]))
            let outcome = await makeSession().runDataTask(server.url("/loop"))
            #expect(outcome.urlError?.code == .httpTooManyRedirects)
        }
    }
}

@Suite("Connection slots are never lost")
struct ConnectionSlotTests {
    @Test(arguments: WireProtocol.allCases)
    func failedCancelledAndClosingRequestsGiveTheirConnectionBack(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            server.route("/silent", response: .silent)
            var closing = MockResponse.ok("closing")
            closing.closeConnection = true
            server.route("/closing", response: closing)
            var dropped = MockResponse.ok(Data(repeating: 1, count: 10_000))
            dropped.closeAfterBodyBytes = 10
            server.route("/dropped", response: dropped)
            server.route("/ok", response: .ok("ok"))
            // One connection per host: a single leaked slot would make the last request wait forever.
            let session = makeSession { $0.httpMaximumConnectionsPerHost = 1 }
            for _ in 0..<3 {
                var timeout = URLRequest(url: server.url("/silent"))
                timeout.timeoutInterval = 0.1
                #expect(await session.runDataTask(timeout).urlError?.code == .timedOut)
                #expect(await session.runDataTask(server.url("/closing")).data == Data("closing".utf8))
                #expect(await session.runDataTask(server.url("/dropped")).urlError?.code == .networkConnectionLost)
                let cancelled = await session.runDataTask(URLRequest(url: server.url("/silent"))) { task in
                    DispatchQueue.global().asyncAfter(deadline: .now() + 0.05) { task.cancel() }
                }
                #expect(cancelled.urlError?.code == .cancelled)
            }
            var last = URLRequest(url: server.url("/ok"))
            last.timeoutInterval = 5
            #expect(await session.runDataTask(last).data == Data("ok".utf8))
        }
    }
}

@Suite("Waiting for a connection")
struct ConnectionWaitTests {
    @Test(arguments: WireProtocol.allCases)
    func aRequestWaitingForAConnectionTimesOut(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            server.route("/silent", response: .silent)
            let session = makeSession { $0.httpMaximumConnectionsPerHost = 1 }
            let blocker = Task { await session.runDataTask(URLRequest(url: server.url("/silent"))) }
            try await Task.sleep(for: .milliseconds(50))
            var waiting = URLRequest(url: server.url("/silent"))
            waiting.timeoutInterval = 0.2
            let started = ContinuousClock.now
            #expect(await session.runDataTask(waiting).urlError?.code == .timedOut)
            // Far below "never" (the blocker holds the only connection until the session is cancelled), with room
            // for a loaded machine.
            #expect(ContinuousClock.now - started < .seconds(15))
            session.invalidateAndCancel()
            #expect(await blocker.value.urlError?.code == .cancelled)
        }
    }
}

@Suite("Tasks without a delegate or handler")
struct NoDelegateTests {
    @Test(arguments: WireProtocol.allCases)
    func aLargeBodyWithNobodyListeningStillCompletes(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            server.route("/big", response: MockResponse(body: .pattern(length: 5_000_000)))
            let session = makeSession()
            let task = session.dataTask(with: server.url("/big"))
            task.resume()
            // A deadline rather than a count of sleeps, whose length depends on how loaded the machine is.
            try await waitUntil(timeout: .seconds(60)) { task.state == .completed }
            #expect(task.state == .completed, "\(task.countOfBytesReceived) bytes received")
            #expect(task.countOfBytesReceived == 5_000_000)
        }
    }
}

@Suite("Content decoding on a keep-alive connection")
struct ContentDecodingTests {
    @Test(arguments: WireProtocol.allCases)
    func plainThenDeflateThenPlainOnOneConnection(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            // zlib.compress(b"deflated body, deflated body\n")
            let deflated: [UInt8] = [
                0x78, 0x9c, 0x4b, 0x49, 0x4d, 0xcb, 0x49, 0x2c, 0x49, 0x4d, 0x51, 0x48, 0xca, 0x4f, 0xa9, 0xd4,
                0x51, 0x48, 0x41, 0xe6, 0x72, 0x01, 0x00, 0xa0, 0xc6, 0x0a, 0x65,
            ]
            server.route("/plain", response: .ok("plain body"))
            server.route(
                "/deflate",
                response: MockResponse(headers: [("Content-Encoding", "deflate")], body: .data(Data(deflated)))
            )
            let session = makeSession()
            #expect(await session.runDataTask(server.url("/plain")).data == Data("plain body".utf8))
            let decoded = await session.runDataTask(server.url("/deflate"))
            #expect(decoded.data == Data("deflated body, deflated body\n".utf8))
            #expect(await session.runDataTask(server.url("/plain")).data == Data("plain body".utf8))
            #expect(server.connectionCount == 1)
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func corruptCompressedBodyIsCannotDecodeRawData(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            server.route(
                "/bad",
                response: MockResponse(headers: [("Content-Encoding", "gzip")], body: .data(Data("not gzip".utf8)))
            )
            let outcome = await makeSession().runDataTask(server.url("/bad"))
            #expect(outcome.urlError?.code == .cannotDecodeRawData)
        }
    }
}
