import Courier
import CourierMockServer
import Foundation
import NIOConcurrencyHelpers
import Testing

/// A session with a fresh ephemeral configuration, optionally adjusted. No proxy unless the test sets one: an
/// `http_proxy` in the environment of the machine running the tests must not send loopback requests elsewhere.
/// It trusts the shared test CA of the HTTP/2 servers (``SharedTestTLS``); a test that sets its own trusted
/// certificates replaces it.
func makeSession(
    delegate: (any URLSessionDelegate)? = nil,
    queue: OperationQueue? = nil,
    _ adjust: (URLSessionConfiguration) -> Void = { _ in }
) -> URLSession {
    let configuration = URLSessionConfiguration.ephemeral
    configuration.connectionProxyDictionary = [:]
    configuration.courierAdditionalTrustedCertificates = [SharedTestTLS.authorityDER]
    adjust(configuration)
    return URLSession(configuration: configuration, delegate: delegate, delegateQueue: queue)
}

/// The outcome of a data task run with a completion handler.
struct DataOutcome: @unchecked Sendable {
    var data: Data?
    var response: URLResponse?
    var error: (any Error)?
    var onDelegateQueue: Bool

    var http: HTTPURLResponse? { response as? HTTPURLResponse }
    var urlError: URLError? { error as? URLError }
}

extension URLSession {
    /// Runs a data task with a completion handler and waits for it.
    func runDataTask(_ request: URLRequest, configure: (URLSessionDataTask) -> Void = { _ in }) async -> DataOutcome {
        await withCheckedContinuation { continuation in
            let queue = delegateQueue
            let task = dataTask(with: request) { data, response, error in
                continuation.resume(
                    returning: DataOutcome(
                        data: data,
                        response: response,
                        error: error,
                        onDelegateQueue: OperationQueue.current === queue
                    )
                )
            }
            configure(task)
            task.resume()
        }
    }

    func runDataTask(_ url: URL) async -> DataOutcome {
        await runDataTask(URLRequest(url: url))
    }
}

/// A delegate that records every event in order and lets a test wait for completion.
final class RecordingDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    enum Event: Equatable {
        case created(Int)
        case response(Int)
        case data(Int)
        case sent(Int64, Int64, Int64)
        case redirect(String)
        case delayed
        case complete(URLError.Code?)
        case invalid
    }

    private let state = NIOLockedValueBox<
        (events: [Event], body: Data, waiters: [CheckedContinuation<Void, Never>], completed: Int, offQueue: Int)
    >(([], Data(), [], 0, 0))
    var disposition: URLSession.ResponseDisposition = .allow
    var delayedDisposition: URLSession.DelayedRequestDisposition = .continueLoading
    /// When `willBeginDelayedRequest` was called.
    let delayedAt = NIOLockedValueBox<ContinuousClock.Instant?>(nil)
    var followRedirects = true
    var expectedQueue: OperationQueue?
    var errors: [URLError] = []

    var events: [Event] { state.withLockedValue { $0.events } }
    var body: Data { state.withLockedValue { $0.body } }
    /// Calls that did not run on `expectedQueue`.
    var callsOffQueue: Int { state.withLockedValue { $0.offQueue } }

    private func record(_ event: Event) {
        state.withLockedValue { state in
            state.events.append(event)
            // didCreateTask runs on the creating thread by design; every other call must be on the queue.
            if case .created = event { return }
            if let expectedQueue, OperationQueue.current !== expectedQueue { state.offQueue += 1 }
        }
    }

    /// Waits until `count` tasks completed (or the session became invalid, counted too).
    func waitForCompletions(_ count: Int = 1) async {
        await withCheckedContinuation { continuation in
            let done = state.withLockedValue { state -> Bool in
                if state.completed >= count { return true }
                state.waiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
        let stillShort = state.withLockedValue { $0.completed < count }
        if stillShort { await waitForCompletions(count) }
    }

    private func signal() {
        let waiters = state.withLockedValue { state in
            state.completed += 1
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func urlSession(_ session: URLSession, didCreateTask task: URLSessionTask) {
        record(.created(task.taskIdentifier))
    }

    func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        record(.response((response as? HTTPURLResponse)?.statusCode ?? 0))
        completionHandler(disposition)
    }

    /// Runs on the delegate queue once, with the first body bytes (a test that must act mid-body does it here,
    /// without racing the transfer from another thread).
    var onFirstData: (@Sendable (URLSessionDataTask) -> Void)?

    /// Makes the task whose first body bytes arrive suspend itself then, on the delegate queue (see ``onFirstData``),
    /// and returns a gate opened once it has (its `wait()` records an issue rather than hang when no bytes come).
    func suspendingAtFirstData() -> AsyncGate {
        let suspended = AsyncGate()
        onFirstData = { task in
            task.suspend()
            suspended.open()
        }
        return suspended
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        record(.data(data.count))
        let first = state.withLockedValue { state in
            defer { state.body.append(data) }
            return state.body.isEmpty
        }
        if first { onFirstData?(dataTask) }
    }

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        didSendBodyData bytesSent: Int64,
        totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) {
        record(.sent(bytesSent, totalBytesSent, totalBytesExpectedToSend))
    }

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        record(.redirect(request.url?.path ?? ""))
        completionHandler(followRedirects ? request : nil)
    }

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willBeginDelayedRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLSession.DelayedRequestDisposition, URLRequest?) -> Void
    ) {
        delayedAt.withLockedValue { $0 = .now }
        record(.delayed)
        completionHandler(delayedDisposition, nil)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let urlError = error as? URLError
        record(.complete(urlError?.code))
        if let urlError { state.withLockedValue { _ in errors.append(urlError) } }
        signal()
    }

    func urlSession(_ session: URLSession, didBecomeInvalidWithError error: (any Error)?) {
        record(.invalid)
        signal()
    }

    /// The data events merged: total bytes delivered.
    var dataBytes: Int {
        events.reduce(0) { total, event in
            if case .data(let count) = event { return total + count }
            return total
        }
    }
}
