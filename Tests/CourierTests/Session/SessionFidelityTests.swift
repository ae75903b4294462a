import CourierMockServer
import CourierTestSupport
import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import Courier

/// Session and task semantics where Courier must behave as Darwin's URLSession (and FoundationNetworking) do.
@Suite("Session fidelity")
struct SessionFidelityTests {
    // MARK: - Task bookkeeping

    private func taskCount(_ session: URLSession) async -> Int {
        await withCheckedContinuation { continuation in
            session.getAllTasks { continuation.resume(returning: $0.count) }
        }
    }

    /// Darwin lists a task from its first `resume()` until it is cancelled or completes; a cancelled task leaves
    /// the list at once, before its completion is delivered.
    @Test func theTaskListHoldsResumedTasksUntilTheyAreCancelledOrComplete() async throws {
        try await withServer { server in
            server.route("/ok", response: .ok("ok"))
            server.route("/slow", response: .silent)
            let session = makeSession()
            defer { session.invalidateAndCancel() }
            _ = await session.runDataTask(server.url("/ok"))
            #expect(await taskCount(session) == 0)

            let created = session.dataTask(with: server.url("/slow"))
            #expect(await taskCount(session) == 0)
            created.resume()
            #expect(await taskCount(session) == 1)
            created.suspend()
            #expect(await taskCount(session) == 1)
            created.resume()
            created.cancel()
            #expect(await taskCount(session) == 0)
            #expect(await session.allTasks.isEmpty)

            let never = session.dataTask(with: server.url("/ok"))
            never.cancel()
            never.resume()
            #expect(await taskCount(session) == 0)
            let (data, uploads, downloads) = await session.tasks
            #expect(data.isEmpty && uploads.isEmpty && downloads.isEmpty)
        }
    }

    @Test func invalidateAndCancelEmptiesTheTaskListAtOnce() async throws {
        try await withServer { server in
            server.route("/slow", response: .silent)
            let delegate = RecordingDelegate()
            let session = makeSession(delegate: delegate)
            let tasks = (0..<5).map { _ in session.dataTask(with: server.url("/slow")) }
            for task in tasks { task.resume() }
            #expect(await taskCount(session) == 5)
            session.invalidateAndCancel()
            #expect(await taskCount(session) == 0)
            // Resuming after invalidation changes nothing.
            let late = session.dataTask(with: server.url("/slow"))
            late.resume()
            #expect(await taskCount(session) == 0)
            await delegate.waitForCompletions(6)
            #expect(tasks.allSatisfy { $0.state == .completed })
        }
    }

    @Test func aCancelledTaskCannotBeResumed() async throws {
        try await withServer { server in
            server.route("/ok", response: .ok("ok"))
            let delegate = RecordingDelegate()
            let session = makeSession(delegate: delegate)
            defer { session.invalidateAndCancel() }
            let task = session.dataTask(with: server.url("/ok"))
            task.cancel()
            task.resume()
            await delegate.waitForCompletions(1)
            try await Task.sleep(for: .milliseconds(100))
            #expect(server.requests.isEmpty)
            #expect(task.state == .completed)
            #expect((task.error as? URLError)?.code == .cancelled)
        }
    }

    @Test func suspendAndResumeChangeTheStateAtOnce() async throws {
        try await withServer { server in
            server.route("/slow", response: .silent)
            let session = makeSession()
            defer { session.invalidateAndCancel() }
            let task = session.dataTask(with: server.url("/slow"))
            #expect(task.state == .suspended)
            task.resume()
            #expect(task.state == .running)
            task.suspend()
            #expect(task.state == .suspended)
            task.resume()
            #expect(task.state == .running)
            task.cancel()
            #expect(task.state == .canceling || task.state == .completed)
        }
    }

    /// `suspend()` and `resume()` nest, as Darwin's header says ("-suspend and -resume are nestable") and
    /// FoundationNetworking counts them: a task suspended twice runs again after the second `resume()`, and a task
    /// suspended before it was ever resumed takes two to start (and is not listed by its session until then).
    @Test func suspendAndResumeNest() async throws {
        try await withServer { server in
            server.route("/ok", response: .ok("ok"))
            let delegate = RecordingDelegate()
            let session = makeSession(delegate: delegate)
            defer { session.invalidateAndCancel() }

            let early = session.dataTask(with: server.url("/ok"))
            early.suspend()
            early.resume()
            #expect(early.state == .suspended)
            #expect(await taskCount(session) == 0)
            early.resume()
            // Running, or on a fast answer already done.
            #expect(early.state != .suspended)
            await delegate.waitForCompletions(1)
            #expect(delegate.body == Data("ok".utf8))

            // Answered after a pause, so that it cannot have completed before the suspends below.
            var delayed = MockResponse.ok("ok")
            delayed.headDelay = .milliseconds(300)
            server.route("/delayed", response: delayed)
            let running = session.dataTask(with: server.url("/delayed"))
            running.resume()
            running.suspend()
            running.suspend()
            running.resume()
            #expect(running.state == .suspended)
            running.resume()
            #expect(running.state != .suspended)
            // More resumes than suspends change nothing.
            running.resume()
            await delegate.waitForCompletions(2)
            #expect(running.state == .completed)
            #expect(running.error == nil)
            #expect(server.requests(path: "/ok").count == 1)
            #expect(server.requests(path: "/delayed").count == 1)
        }
    }

    /// Darwin's default `prefersIncrementalDelivery`: `true` for a task whose body goes to a delegate, `false` for
    /// one with a completion handler and for a download task. A value the app sets is kept.
    @Test func onlyDelegateDataTasksPreferIncrementalDeliveryByDefault() throws {
        let session = makeSession()
        defer { session.invalidateAndCancel() }
        let url = try #require(URL(string: "http://127.0.0.1:9/"))
        let request = URLRequest(url: url)
        #expect(session.dataTask(with: url).prefersIncrementalDelivery)
        #expect(session.uploadTask(with: request, from: Data()).prefersIncrementalDelivery)
        #expect(!session.dataTask(with: url) { _, _, _ in }.prefersIncrementalDelivery)
        #expect(!session.uploadTask(with: request, from: Data()) { _, _, _ in }.prefersIncrementalDelivery)
        #expect(!session.downloadTask(with: url).prefersIncrementalDelivery)
        #expect(!session.downloadTask(with: url) { _, _, _ in }.prefersIncrementalDelivery)

        let handled = session.dataTask(with: url) { _, _, _ in }
        handled.prefersIncrementalDelivery = true
        #expect(handled.prefersIncrementalDelivery)
        let delegated = session.dataTask(with: url)
        delegated.prefersIncrementalDelivery = false
        #expect(!delegated.prefersIncrementalDelivery)
    }

    // MARK: - Errors

    @Test(arguments: ["ftp://example.com/file", "gopher://example.com/", "mailto:someone@example.com"])
    func anUnsupportedSchemeFailsWithUnsupportedURL(url: String) async throws {
        let session = makeSession()
        defer { session.invalidateAndCancel() }
        let outcome = await session.runDataTask(URL(string: url)!)
        #expect(outcome.urlError?.code == .unsupportedURL)
    }

    @Test func aRequestWithoutAURLFailsWithUnsupportedURL() async throws {
        let session = makeSession()
        defer { session.invalidateAndCancel() }
        var request = URLRequest(url: URL(string: "http://127.0.0.1/")!)
        request.url = nil
        let outcome = await session.runDataTask(request)
        #expect(outcome.urlError?.code == .unsupportedURL)
    }

    @Test func tooManyRedirectsUsesDarwinsWording() async throws {
        try await withServer { server in
            server.route("/loop", response: MockResponse(status: 302, headers: [("Location", "/loop")]))
            let session = makeSession()
            defer { session.invalidateAndCancel() }
            let outcome = await session.runDataTask(server.url("/loop"))
            #expect(outcome.urlError?.code == .httpTooManyRedirects)
            #expect(outcome.urlError?.localizedDescription == "too many HTTP redirects")
        }
    }

    // MARK: - Redirects

    /// Darwin's rules, as swift-corelibs-foundation wrote them to match Darwin and tests them: a 303 makes every
    /// method a `GET`, `HEAD` included; 305 and 306 are followed keeping the method and the body, as 307 is; and
    /// 20 redirects in a row are followed (macOS 11 and later; CFNetwork stopped at 16 before).
    @Test func threeOhThreeMakesHeadAGetAndThreeOhFiveKeepsTheMethod() async throws {
        try await withServer { server in
            server.route("/see-other", response: MockResponse(status: 303, headers: [("Location", "/seen")]))
            server.route("/seen", response: .ok("seen"))
            server.route(
                "/use-proxy", method: "POST", response: MockResponse(status: 305, headers: [("Location", "/used")]))
            server.route(
                "/unused", method: "PUT", response: MockResponse(status: 306, headers: [("Location", "/used")]))
            server.route("/used", response: .ok("used"))
            for hop in 0..<20 {
                server.route(
                    "/hop\(hop)", response: MockResponse(status: 302, headers: [("Location", "/hop\(hop + 1)")]))
            }
            server.route("/hop20", response: .ok("end"))
            let session = makeSession()
            defer { session.invalidateAndCancel() }

            var head = URLRequest(url: server.url("/see-other"))
            head.httpMethod = "HEAD"
            let headOutcome = await session.runDataTask(head)
            #expect(headOutcome.http?.statusCode == 200)
            #expect(server.requests(path: "/seen").first?.method == "GET")
            #expect(headOutcome.data == Data("seen".utf8))

            for (path, method) in [("/use-proxy", "POST"), ("/unused", "PUT")] {
                var request = URLRequest(url: server.url(path))
                request.httpMethod = method
                request.httpBody = Data("kept".utf8)
                let outcome = await session.runDataTask(request)
                #expect(outcome.data == Data("used".utf8), "\(path)")
                let followed = try #require(server.requests(path: "/used").last)
                #expect(followed.method == method)
                #expect(followed.body == Data("kept".utf8))
            }

            let twenty = await session.runDataTask(server.url("/hop0"))
            #expect(twenty.data == Data("end".utf8))
            #expect(twenty.error == nil)
        }
    }

    /// A 301 or 302 keeps `HEAD` (a 303 makes it a `GET`, above).
    @Test(arguments: [301, 302])
    func headStaysHeadThroughRedirects(status: Int) async throws {
        try await withServer { server in
            server.route("/from", response: MockResponse(status: status, headers: [("Location", "/to")]))
            server.route("/to", method: "HEAD", response: MockResponse(headers: [("X-Reached", "yes")]))
            let delegate = RecordingDelegate()
            let session = makeSession(delegate: delegate)
            defer { session.invalidateAndCancel() }
            var request = URLRequest(url: server.url("/from"))
            request.httpMethod = "HEAD"
            session.dataTask(with: request).resume()
            await delegate.waitForCompletions(1)
            let methods = server.requests.map(\.method)
            #expect(methods == ["HEAD", "HEAD"])
            #expect(delegate.events.filter { if case .redirect = $0 { true } else { false } }.count == 1)
        }
    }

    @Test(arguments: [307, 308])
    func temporaryAndPermanentRedirectsKeepMethodAndBody(status: Int) async throws {
        try await withServer { server in
            server.route("/from", method: "PUT", response: MockResponse(status: status, headers: [("Location", "/to")]))
            server.route("/to", method: "PUT", response: .ok("done"))
            let session = makeSession()
            defer { session.invalidateAndCancel() }
            var request = URLRequest(url: server.url("/from"))
            request.httpMethod = "PUT"
            request.httpBody = Data("payload".utf8)
            let outcome = await session.runDataTask(request)
            #expect(outcome.http?.statusCode == 200)
            let second = try #require(server.requests(path: "/to").first)
            #expect(second.method == "PUT")
            #expect(second.body == Data("payload".utf8))
        }
    }

    /// A server whose `POST /form` answers `status` with `Location: /to` (and `/to` answers "posted" to any
    /// method), a session, and a `POST /form` request with `body` as its `httpBody`.
    private func withRedirectedForm(
        status: Int, body: Data, _ test: (MockServer, URLSession, URLRequest) async throws -> Void
    ) async throws {
        try await withServer { server in
            server.route(
                "/form", method: "POST", response: MockResponse(status: status, headers: [("Location", "/to")]))
            server.route("/to", response: .ok("posted"))
            let session = makeSession()
            defer { session.invalidateAndCancel() }
            var request = URLRequest(url: server.url("/form"))
            request.httpMethod = "POST"
            request.httpBody = body
            try await test(server, session, request)
        }
    }

    /// Darwin sends the request `willPerformHTTPRedirection` hands back as it is: an app that keeps a POST and its
    /// body through a 301, 302 or 303 (the rule alone would make it a GET without a body) has the body sent.
    @Test(arguments: [301, 302, 303])
    func aBodyTheRedirectDelegateGivesBackIsSent(status: Int) async throws {
        let body = Data("name=value".utf8)
        try await withRedirectedForm(status: status, body: body) { server, session, request in
            let (data, _) = try await session.data(for: request, delegate: PostKeepingDelegate(body: body))
            #expect(data == Data("posted".utf8))
            let followed = try #require(server.requests(path: "/to").first)
            #expect(followed.method == "POST")
            #expect(followed.body == body)
        }
    }

    /// An upload task whose body a redirect's rule dropped never sends that body again: the body the delegate gives
    /// back is the one sent (the upload's data had gone out as a different body under the delegate's request).
    @Test(arguments: [301, 302, 303])
    func anUploadRedirectSendsTheBodyTheDelegateGivesBackNotTheUpload(status: Int) async throws {
        let ignored = Data("ignored by an upload task".utf8)
        try await withRedirectedForm(status: status, body: ignored) { server, session, request in
            let kept = Data("name=value".utf8)
            let (data, _) = try await session.upload(
                for: request, from: Data("the upload".utf8), delegate: PostKeepingDelegate(body: kept))
            #expect(data == Data("posted".utf8))
            #expect(server.requests(path: "/form").first?.body == Data("the upload".utf8))
            let followed = try #require(server.requests(path: "/to").first)
            #expect(followed.method == "POST")
            #expect(followed.body == kept)
        }
    }

    /// 307 and 308 send an upload task's body again, never the request's own `httpBody` (which it ignores); 303
    /// sends none of them.
    @Test(arguments: [303, 307, 308])
    func anUploadWithAnHTTPBodyIsRedirectedWithTheUploadOrNoBody(status: Int) async throws {
        let ignored = Data("ignored by an upload task".utf8)
        try await withRedirectedForm(status: status, body: ignored) { server, session, request in
            let upload = Data("the upload".utf8)
            let (data, _) = try await session.upload(for: request, from: upload)
            #expect(data == Data("posted".utf8))
            let followed = try #require(server.requests(path: "/to").first)
            if status == 303 {
                #expect(followed.method == "GET")
                #expect(followed.bodyLength == 0)
            } else {
                #expect(followed.method == "POST")
                #expect(followed.body == upload)
            }
        }
    }

    /// Keeps a POST and its body through a redirect, as Darwin apps do.
    final class PostKeepingDelegate: NSObject, URLSessionTaskDelegate, Sendable {
        let body: Data

        init(body: Data) {
            self.body = body
        }

        func urlSession(
            _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
            newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
        ) {
            var kept = request
            kept.httpMethod = "POST"
            kept.httpBody = body
            completionHandler(kept)
        }
    }

    // MARK: - Headers on the wire

    @Test func hostIsTheFirstHeaderField() async throws {
        try await withServer { server in
            server.route("/h", response: .ok("ok"))
            let session = makeSession { $0.httpAdditionalHeaders = ["X-Extra": "1"] }
            defer { session.invalidateAndCancel() }
            var request = URLRequest(url: server.url("/h"))
            request.setValue("a", forHTTPHeaderField: "X-App")
            _ = await session.runDataTask(request)
            let recorded = try #require(server.requests.first)
            #expect(recorded.headers.first?.name.lowercased() == "host")
        }
    }
}

/// A task delegate that records the life-cycle calls the async convenience methods must make.
final class LifecycleRecorder: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var recorded: [String] = []

    var events: [String] {
        lock.lock()
        defer { lock.unlock() }
        return recorded
    }

    private func record(_ event: String) {
        lock.lock()
        recorded.append(event)
        lock.unlock()
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        record("redirect \(response.statusCode)")
        completionHandler(request)
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) {
        if totalBytesSent == totalBytesExpectedToSend { record("sent \(totalBytesSent)") }
    }
}

@Suite("Per-call delegates")
struct PerCallDelegateTests {
    @Test(arguments: ["data", "download", "bytes", "upload"])
    func asyncMethodsCallTheGivenTaskDelegate(method: String) async throws {
        try await withServer { server in
            server.route("/from", response: MockResponse(status: 302, headers: [("Location", "/to")]))
            server.route("/from", method: "POST", response: MockResponse(status: 307, headers: [("Location", "/to")]))
            server.route("/to", response: .ok("arrived"))
            server.route("/to", method: "POST", response: .ok("arrived"))
            let session = makeSession()
            defer { session.invalidateAndCancel() }
            let delegate = LifecycleRecorder()
            let url = server.url("/from")
            switch method {
            case "data":
                let (data, _) = try await session.data(from: url, delegate: delegate)
                #expect(data == Data("arrived".utf8))
            case "download":
                let (file, _) = try await session.download(from: url, delegate: delegate)
                try? FileManager.default.removeItem(at: file)
            case "bytes":
                let (bytes, _) = try await session.bytes(from: url, delegate: delegate)
                for try await _ in bytes {}
            default:
                var request = URLRequest(url: url)
                request.httpMethod = "POST"
                _ = try await session.upload(for: request, from: Data(repeating: 7, count: 1000), delegate: delegate)
            }
            let events = delegate.events
            #expect(events.contains { $0.hasPrefix("redirect 30") }, "\(events)")
            if method == "upload" { #expect(events.contains("sent 1000"), "\(events)") }
        }
    }
}

@Suite("Delegate fallback")
struct DelegateFallbackTests {
    /// A task delegate that implements nothing at all.
    final class EmptyTaskDelegate: NSObject, URLSessionTaskDelegate, Sendable {}

    /// A task delegate that implements only the body.
    final class BodyOnlyDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
        private let lock = NSLock()
        private var bytes = 0
        var received: Int {
            lock.lock()
            defer { lock.unlock() }
            return bytes
        }

        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
            lock.lock()
            bytes += data.count
            lock.unlock()
        }
    }

    @Test func theSessionDelegateGetsWhatAnEmptyTaskDelegateLacks() async throws {
        try await withServer { server in
            server.route("/r", response: MockResponse(status: 302, headers: [("Location", "/ok")]))
            server.route("/ok", response: .ok("hello"))
            let sessionDelegate = RecordingDelegate()
            let session = makeSession(delegate: sessionDelegate)
            defer { session.invalidateAndCancel() }
            let task = session.dataTask(with: server.url("/r"))
            task.delegate = EmptyTaskDelegate()
            task.resume()
            await sessionDelegate.waitForCompletions(1)
            let events = sessionDelegate.events
            #expect(events.contains(.redirect("/ok")), "\(events)")
            #expect(events.contains(.response(200)), "\(events)")
            #expect(sessionDelegate.body == Data("hello".utf8))
        }
    }

    @Test func aTaskDelegateKeepsWhatItImplementsAndTheSessionGetsTheRest() async throws {
        try await withServer { server in
            server.route("/ok", response: .ok("hello"))
            let sessionDelegate = RecordingDelegate()
            let session = makeSession(delegate: sessionDelegate)
            defer { session.invalidateAndCancel() }
            let own = BodyOnlyDelegate()
            let task = session.dataTask(with: server.url("/ok"))
            task.delegate = own
            task.resume()
            await sessionDelegate.waitForCompletions(1)
            #expect(own.received == 5)
            // The body went to the task's delegate only; the response decision and completion to the session's.
            #expect(sessionDelegate.body.isEmpty)
            #expect(sessionDelegate.events.contains(.response(200)))
        }
    }
}

extension DelegateFallbackTests {
    /// A WebSocket task's own delegate that implements only the completion: the open and the close go to the
    /// session's delegate, as on Darwin. The protocol's empty defaults swallowed them.
    final class CompletionOnlyWebSocketDelegate: NSObject, URLSessionWebSocketDelegate, Sendable {}

    @Test func theSessionDelegateGetsTheWebSocketEventsATaskDelegateLacks() async throws {
        try await withServer { server in
            server.webSocket("/s", endpoint: .script(.close(code: 4000, reason: "done")))
            let sessionDelegate = WebSocketRecorder()
            let session = makeSession(delegate: sessionDelegate)
            defer { session.invalidateAndCancel() }
            let task = session.webSocketTask(with: try WebSocketTaskTests.webSocketURL(server, "/s"))
            task.delegate = CompletionOnlyWebSocketDelegate()
            task.resume()
            try await sessionDelegate.completion()
            #expect(sessionDelegate.events == [.opened(nil), .closed(.other(4000), "done"), .completed(nil)])
        }
    }
}

@Suite("Proxy settings are never silently ignored")
struct ProxySettingsTests {
    @Test(arguments: ["HTTP", "SOCKS"])
    func aProxyThatCannotBeReachedFailsTheTaskInsteadOfGoingDirect(kind: String) async throws {
        let refusing = try RefusingPort()
        let port = refusing.port
        defer { withExtendedLifetime(refusing) {} }
        try await withServer { server in
            server.route("/p", response: .ok("direct"))
            let session = makeSession {
                $0.connectionProxyDictionary = ["\(kind)Enable": 1, "\(kind)Proxy": "127.0.0.1", "\(kind)Port": port]
            }
            defer { session.invalidateAndCancel() }
            let outcome = await session.runDataTask(server.url("/p"))
            #expect(outcome.urlError?.code == .cannotConnectToHost)
            #expect(server.requests.isEmpty)
        }
    }

    @Test(arguments: [
        (
            ["ProxyAutoConfigEnable": 1, "ProxyAutoConfigURLString": "http://127.0.0.1/pac"] as [String: any Sendable],
            true
        ),
        (["ProxyAutoDiscoveryEnable": true], true),
        (["HTTPEnable": 0, "HTTPProxy": "127.0.0.1"], false), (["HTTPSEnable": true], false), ([:], false),
    ])
    func settingsCourierCannotHonourFailLoudly(settings: [String: any Sendable], fails: Bool) async throws {
        try await withServer { server in
            server.route("/p", response: .ok("direct"))
            let session = makeSession { $0.connectionProxyDictionary = settings }
            defer { session.invalidateAndCancel() }
            let outcome = await session.runDataTask(server.url("/p"))
            if fails {
                #expect(outcome.urlError?.code == .unsupportedURL)
                #expect(server.requests.isEmpty)
            } else {
                #expect(outcome.http?.statusCode == 200)
            }
        }
    }
}
