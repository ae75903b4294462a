import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Regressions for races and edge cases found in review; each failed (or hung) before its fix.
@Suite("Review findings")
struct ReviewFindingsTests {
    @Test func cancelRacingTheFirstResumeAlwaysWins() async throws {
        try await withServer { server in
            server.route("/silent", response: .silent)
            let session = makeSession { $0.httpMaximumConnectionsPerHost = 64 }
            let outcomes = await withTaskGroup(of: URLError.Code?.self) { group in
                for _ in 0..<100 {
                    group.addTask {
                        await withCheckedContinuation { continuation in
                            let task = session.dataTask(with: server.url("/silent")) { _, _, error in
                                continuation.resume(returning: (error as? URLError)?.code)
                            }
                            DispatchQueue.global().async { task.resume() }
                            DispatchQueue.global().async { task.cancel() }
                        }
                    }
                }
                var codes: [URLError.Code?] = []
                for await code in group { codes.append(code) }
                return codes
            }
            #expect(outcomes.count == 100)
            #expect(outcomes.allSatisfy { $0 == .cancelled })
            session.invalidateAndCancel()
        }
    }

    @Test func aServerThatNeverAnswersTheTLSHandshakeTimesOut() async throws {
        // A listening socket that is never accepted: the kernel completes TCP, nobody answers the ClientHello.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #expect(fd >= 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        #expect(bound == 0)
        #expect(listen(fd, 16) == 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        let port = Int(UInt16(bigEndian: address.sin_port))
        var request = URLRequest(url: try #require(URL(string: "https://127.0.0.1:\(port)/")))
        request.timeoutInterval = 0.5
        let session = makeSession()
        // Timed from `resume()` to the completion handler, which runs on the delegate queue: the test's own task
        // resumes on Swift's cooperative pool, which the suite's CPU-heavy tests can keep busy for seconds (15.7 s
        // once), though Courier called the handler after 0.5 s.
        let started = ContinuousClock.now
        let calledAfter = await withCheckedContinuation { (continuation: CheckedContinuation<Duration, Never>) in
            let task = session.dataTask(with: request) { _, _, error in
                #expect((error as? URLError)?.code == .timedOut)
                continuation.resume(returning: ContinuousClock.now - started)
            }
            task.resume()
        }
        // Far below the 60 s default that a timer-less handshake would wait.
        #expect(calledAfter >= .milliseconds(450))
        #expect(calledAfter < .seconds(10))
        session.finishTasksAndInvalidate()
    }

    @Test func theBodyDecidesContentLengthNotTheApp() async throws {
        try await withServer { server in
            server.route("/cl", method: "POST", response: .ok("first"))
            server.route("/next", response: .ok("second"))
            var request = URLRequest(url: server.url("/cl"))
            request.httpMethod = "POST"
            request.httpBody = Data("0123456789".utf8)
            request.setValue("5", forHTTPHeaderField: "Content-Length")
            let session = makeSession()
            #expect(await session.runDataTask(request).data == Data("first".utf8))
            #expect(await session.runDataTask(server.url("/next")).data == Data("second".utf8))
            let recorded = try #require(server.requests(path: "/cl").first)
            #expect(recorded.header("Content-Length") == "10")
            #expect(recorded.body == Data("0123456789".utf8))
            #expect(server.requests.map(\.path) == ["/cl", "/next"])
        }
    }

    @Test func anUploadRedirectedBy303IsFollowedWithoutItsBody() async throws {
        try await withServer { server in
            server.route("/form", method: "POST", response: MockResponse(status: 303, headers: [("Location", "/done")]))
            server.route("/done", response: .ok("done"))
            var request = URLRequest(url: server.url("/form"))
            request.httpMethod = "POST"
            let session = makeSession()
            let outcome: DataOutcome = await withCheckedContinuation { continuation in
                session.uploadTask(with: request, from: Data(repeating: 1, count: 1000)) { data, response, error in
                    continuation.resume(
                        returning: DataOutcome(data: data, response: response, error: error, onDelegateQueue: true)
                    )
                }.resume()
            }
            #expect(outcome.data == Data("done".utf8))
            let followed = try #require(server.requests(path: "/done").first)
            #expect(followed.method == "GET")
            #expect(followed.bodyLength == 0)
            #expect(followed.header("Content-Length") == nil)
        }
    }

    @Test func aBodyStreamRedirectedBy307AsksTheDelegateForANewStream() async throws {
        try await withServer { server in
            server.route("/old", method: "POST", response: MockResponse(status: 307, headers: [("Location", "/new")]))
            server.route("/new", method: "POST", response: .status(201))
            let body = Data(repeating: 3, count: 5000)
            let delegate = StreamProvidingDelegate(body: body)
            let session = makeSession(delegate: delegate)
            var request = URLRequest(url: server.url("/old"))
            request.httpMethod = "POST"
            request.httpBodyStream = InputStream(data: body)
            session.dataTask(with: request).resume()
            await delegate.recorder.waitForCompletions()
            #expect(delegate.requests.withLockedValue { $0 } == 1)
            #expect(server.requests(path: "/new").first?.bodyLength == 5000)
        }
    }

    @Test func droppingAsyncBytesUnreadCancelsItsTask() async throws {
        try await withServer { server in
            server.route("/big", response: MockResponse(body: .pattern(length: 20_000_000)))
            let session = makeSession()
            var task: URLSessionDataTask?
            do {
                let (bytes, response) = try await session.bytes(from: server.url("/big"))
                #expect((response as? HTTPURLResponse)?.statusCode == 200)
                task = bytes.task
            }
            let dropped = try #require(task)
            for _ in 0..<300 where dropped.state != .completed { try await Task.sleep(for: .milliseconds(10)) }
            #expect(dropped.state == .completed)
            #expect((dropped.error as? URLError)?.code == .cancelled)
            #expect(await session.allTasks.isEmpty)
        }
    }
}
