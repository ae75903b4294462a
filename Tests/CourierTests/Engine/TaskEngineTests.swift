import CourierHTTP
import CourierTransport
import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import Courier

/// The engine driven through the public API against ``FakeTransport``: every response is scripted, so races
/// (suspend before the first byte, events of an abandoned attempt, cancel during a decision) are exact.
@Suite("Task engine against a fake transport")
struct TaskEngineTests {
    private func session(
        delegate: (any URLSessionDelegate)? = nil,
        transport: FakeTransport,
        _ adjust: (URLSessionConfiguration) -> Void = { _ in }
    ) -> URLSession {
        let configuration = URLSessionConfiguration.ephemeral
        adjust(configuration)
        return URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil, transport: transport)
    }

    private let url = URL(string: "http://example.test/a")!

    /// A completion handler gets the source's body and response.
    @Test func aDataTaskCompletesWithTheSourcesBody() async throws {
        let transport = FakeTransport { $0.answer(200, "hello") }
        let outcome = await session(transport: transport).runDataTask(url)
        #expect(outcome.error == nil)
        #expect(outcome.data == Data("hello".utf8))
        #expect(outcome.http?.statusCode == 200)
        #expect(transport.exchanges.count == 1)
        #expect(transport.exchanges.first?.request.url == url)
    }

    /// The delegate sees the response, the data and the completion, in that order, on the delegate queue.
    @Test func theDelegateSeesResponseDataAndCompletionInOrder() async throws {
        let transport = FakeTransport()
        let delegate = RecordingDelegate()
        let task = session(delegate: delegate, transport: transport).dataTask(with: url)
        task.resume()
        let exchange = try await transport.exchange(1)
        exchange.respond(200, [("Content-Length", "6")])
        exchange.send("abc")
        exchange.send("def")
        exchange.finish()
        await delegate.waitForCompletions()
        #expect(
            delegate.events.filter { $0 != .created(task.taskIdentifier) } == [
                .response(200), .data(3), .data(3), .complete(nil),
            ])
        #expect(delegate.body == Data("abcdef".utf8))
    }

    /// Suspended before the first byte: the source starts paused, and what arrives anyway is held until resume.
    @Test func suspendBeforeTheFirstByteHoldsEverythingUntilResume() async throws {
        let transport = FakeTransport()
        let delegate = RecordingDelegate()
        let task = session(delegate: delegate, transport: transport).dataTask(with: url)
        task.resume()
        task.suspend()
        let exchange = try await transport.exchange(1)
        try await waitUntil { exchange.isPaused }
        exchange.respond(200, [("Content-Length", "2")])
        exchange.send("ok")
        exchange.finish()
        try await Task.sleep(for: .milliseconds(50))
        #expect(delegate.events.allSatisfy { if case .created = $0 { true } else { false } })
        #expect(task.state == .suspended)
        task.resume()
        await delegate.waitForCompletions()
        #expect(delegate.body == Data("ok".utf8))
        #expect(exchange.calls.first == .pause)
    }

    /// A redirect drains the old exchange (so its connection can be reused) and follows on a new one; late events
    /// of the abandoned attempt never reach the task.
    @Test func aRedirectDrainsTheOldExchangeAndIgnoresItsLateEvents() async throws {
        let transport = FakeTransport()
        let outcome = NIOLockedValueBox<DataOutcome?>(nil)
        let done = AsyncFlag()
        let handled = session(transport: transport).dataTask(with: url) { data, response, error in
            let result = DataOutcome(data: data, response: response, error: error, onDelegateQueue: true)
            outcome.withLockedValue { $0 = result }
            done.set()
        }
        handled.resume()
        let first = try await transport.exchange(1)
        first.respond(302, [("Location", "/b"), ("Content-Length", "5")])
        let second = try await transport.exchange(2)
        #expect(first.calls.contains(.drain))
        #expect(second.request.url.path == "/b")
        first.send("stale")
        first.finish()
        second.answer(200, "fresh")
        await done.wait()
        let result = try #require(outcome.withLockedValue { $0 })
        #expect(result.data == Data("fresh".utf8))
        #expect(handled.currentRequest?.url?.path == "/b")
        #expect(handled.originalRequest?.url?.path == "/a")
    }

    /// A cancel while the delegate decides on the response (and never answers) completes the task, cancelled,
    /// and stops the source.
    @Test func aCancelWhileTheDelegateDecidesCompletesTheTask() async throws {
        let transport = FakeTransport()
        let delegate = SilentDelegate()
        let task = session(delegate: delegate, transport: transport).dataTask(with: url)
        task.resume()
        let exchange = try await transport.exchange(1)
        exchange.respond(200, [("Content-Length", "1")])
        exchange.send("x")
        await delegate.asked.wait()
        task.cancel()
        await delegate.completed.wait()
        #expect(delegate.error?.code == .cancelled)
        #expect(exchange.calls.contains(.cancel))
    }

    /// A decision the app never answers is still bound by `timeoutIntervalForResource`.
    @Test func anUnansweredDecisionTimesOutWithTheResourceTimeout() async throws {
        // The head comes at once, from the transport's side: the test's own pace does not matter.
        let transport = FakeTransport { $0.respond(200, [("Content-Length", "1")]) }
        let delegate = SilentDelegate()
        let task = session(delegate: delegate, transport: transport) { $0.timeoutIntervalForResource = 2 }
            .dataTask(with: url)
        let started = ContinuousClock.now
        task.resume()
        await delegate.completed.wait()
        #expect(delegate.error?.code == .timedOut)
        #expect(ContinuousClock.now - started >= .milliseconds(1900))
        #expect(delegate.asked.isSet)
        #expect(transport.exchanges.first?.calls.contains(.pause) == true)
    }

    /// Time spent suspended does not count against the resource timeout.
    @Test func suspendedTimeDoesNotCountAgainstTheResourceTimeout() async throws {
        let taskBox = NIOLockedValueBox<URLSessionTask?>(nil)
        // Suspended as soon as the request reaches the transport, from the engine's side.
        let transport = FakeTransport { _ in taskBox.withLockedValue { $0 }?.suspend() }
        let session = session(transport: transport) { $0.timeoutIntervalForResource = 1 }
        let done = AsyncFlag()
        let error = NIOLockedValueBox<(any Error)?>(nil)
        let task = session.dataTask(with: url) { _, _, failure in
            error.withLockedValue { $0 = failure }
            done.set()
        }
        taskBox.withLockedValue { $0 = task }
        task.resume()
        let exchange = try await transport.exchange(1)
        #expect(task.state == .suspended)
        try await Task.sleep(for: .milliseconds(1500))
        #expect(task.state == .suspended)
        task.resume()
        exchange.answer(200, "late but fine")
        await done.wait()
        #expect(error.withLockedValue { $0 } == nil)
    }

    /// A failure after the head fails the task with the mapped error.
    @Test func aFailureAfterTheHeadFailsTheTask() async throws {
        let transport = FakeTransport { exchange in
            exchange.respond(200, [("Content-Length", "10")])
            exchange.send("abc")
            exchange.fail(.networkConnectionLost("the server went away"))
        }
        let outcome = await session(transport: transport).runDataTask(url)
        #expect(outcome.urlError?.code == .networkConnectionLost)
        #expect(outcome.data == nil)
    }

    /// A cancel racing the end completes the task exactly once, with either outcome.
    @Test func aCancelRacingTheEndCompletesOnce() async throws {
        for _ in 0..<50 {
            let transport = FakeTransport()
            let delegate = RecordingDelegate()
            let task = session(delegate: delegate, transport: transport).dataTask(with: url)
            task.resume()
            let exchange = try await transport.exchange(1)
            exchange.respond(200, [("Content-Length", "1")])
            exchange.send("x")
            await withTaskGroup(of: Void.self) { group in
                group.addTask { exchange.finish() }
                group.addTask { task.cancel() }
            }
            await delegate.waitForCompletions()
            try await Task.sleep(for: .milliseconds(5))
            let completions = delegate.events.filter { if case .complete = $0 { true } else { false } }
            #expect(completions.count == 1)
        }
    }

    /// A slow delegate pauses the source once more than the watermark waits on the delegate queue, and the
    /// source continues when the delegate catches up. (The queue is suspended rather than blocked: no thread is
    /// held.)
    @Test func aSlowDelegatePausesTheSource() async throws {
        let transport = FakeTransport()
        let delegate = CountingDelegate()
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let session = URLSession(
            configuration: .ephemeral, delegate: delegate, delegateQueue: queue, transport: transport)
        let task = session.dataTask(with: url)
        task.resume()
        let exchange = try await transport.exchange(1)
        exchange.respond(200)
        try await waitUntil { task.response != nil }
        queue.isSuspended = true
        let chunk = String(repeating: "z", count: 256 * 1024)
        for _ in 0..<8 { exchange.send(chunk) }
        try await waitUntil { exchange.isPaused }
        queue.isSuspended = false
        try await waitUntil { !exchange.isPaused }
        exchange.finish()
        await delegate.completed.wait()
        #expect(delegate.received == 8 * 256 * 1024)
    }

    /// `willBeginDelayedRequest` may replace the request; the engine loads the new one.
    @Test func aDelayedRequestTheDelegateReplacesIsTheOneLoaded() async throws {
        let transport = FakeTransport { $0.answer(200, "") }
        let delegate = RecordingDelegate()
        delegate.delayedDisposition = .useNewRequest
        let session = session(delegate: delegate, transport: transport)
        let task = session.dataTask(with: url)
        task.earliestBeginDate = Date(timeIntervalSinceNow: 0.05)
        task.resume()
        await delegate.waitForCompletions()
        #expect(delegate.events.contains(.delayed))
        #expect(transport.exchanges.count == 1)
    }

    /// A scheme the engine cannot load fails in the request side, before any exchange.
    @Test func aStageFailureNeverReachesTheTransport() async throws {
        let transport = FakeTransport()
        let outcome = await session(transport: transport).runDataTask(URL(string: "gopher://example.test/")!)
        #expect(outcome.urlError?.code == .unsupportedURL)
        #expect(transport.exchanges.isEmpty)
    }

    /// More than the maximum number of redirects fails with `httpTooManyRedirects`.
    @Test func tooManyRedirectsFail() async throws {
        let transport = FakeTransport { $0.answer(302, "", headers: [("Location", "/again")]) }
        let outcome = await session(transport: transport).runDataTask(url)
        #expect(outcome.urlError?.code == .httpTooManyRedirects)
        #expect(transport.exchanges.count == RedirectPolicy.maximumRedirects + 1)
    }

    /// `.becomeDownload`: the held body and the rest go to a file handed to `didFinishDownloadingTo`.
    @Test func becomeDownloadMovesTheBodyToAFile() async throws {
        let transport = FakeTransport()
        let delegate = BecomeDownloadDelegate()
        let task = session(delegate: delegate, transport: transport).dataTask(with: url)
        task.resume()
        let exchange = try await transport.exchange(1)
        exchange.respond(200, [("Content-Length", "6")])
        exchange.send("abc")
        await delegate.becameDownload.wait()
        exchange.send("def")
        exchange.finish()
        await delegate.completed.wait()
        #expect(delegate.fileContents == Data("abcdef".utf8))
        #expect(delegate.error == nil)
    }
}

/// Polls `condition` (the fake records calls from the engine's executor) for up to `timeout`: thirty seconds by
/// default, as a machine running the whole suite on 2 cores can stall every test for seconds (11–12 s seen, which
/// the earlier ten did not cover); it returns as soon as the condition holds, so passing tests do not wait.
func waitUntil(timeout: Duration = .seconds(30), _ condition: () -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while !condition() {
        if ContinuousClock.now > deadline {
            Issue.record("condition not met in time")
            return
        }
        try await Task.sleep(for: .milliseconds(2))
    }
}

/// A one-shot signal for tests.
final class AsyncFlag: Sendable {
    private let state = NIOLockedValueBox<(set: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func set() {
        let waiters = state.withLockedValue { state in
            state.set = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    var isSet: Bool { state.withLockedValue { $0.set } }

    func wait() async {
        await withCheckedContinuation { continuation in
            let ready = state.withLockedValue { state in
                if state.set { return true }
                state.waiters.append(continuation)
                return false
            }
            if ready { continuation.resume() }
        }
    }
}

/// Never answers the response decision.
final class SilentDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    let asked = AsyncFlag()
    let completed = AsyncFlag()
    private let errorBox = NIOLockedValueBox<URLError?>(nil)
    var error: URLError? { errorBox.withLockedValue { $0 } }

    func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        asked.set()
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        errorBox.withLockedValue { $0 = error as? URLError }
        completed.set()
    }
}

/// Counts the body bytes it receives.
final class CountingDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private let count = NIOLockedValueBox(0)
    let completed = AsyncFlag()
    var received: Int { count.withLockedValue { $0 } }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        count.withLockedValue { $0 += data.count }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        completed.set()
    }
}

/// Turns the data task into a download task and reads the downloaded file.
final class BecomeDownloadDelegate: NSObject, URLSessionDataDelegate, URLSessionDownloadDelegate,
    @unchecked Sendable
{
    let becameDownload = AsyncFlag()
    let completed = AsyncFlag()
    private let state = NIOLockedValueBox<(file: Data?, error: URLError?)>((nil, nil))
    var fileContents: Data? { state.withLockedValue { $0.file } }
    var error: URLError? { state.withLockedValue { $0.error } }

    func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        completionHandler(.becomeDownload)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didBecome downloadTask: URLSessionDownloadTask)
    {
        becameDownload.set()
    }

    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL) {
        let data = try? Data(contentsOf: location)
        state.withLockedValue { $0.file = data }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        if task is URLSessionDownloadTask {
            state.withLockedValue { $0.error = error as? URLError }
            completed.set()
        }
    }
}
