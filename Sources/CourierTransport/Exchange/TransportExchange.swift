import CourierHTTP
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Synchronization

/// One request on its way through the pool: the request side of the transport boundary (async-http-client's
/// executable request is the model). The pool leases it an ``ExchangeExecutor`` (a connection, or later a stream
/// of one); from then on cancel, pause, resume and drain go to that executor.
///
/// A request that fails on a reused keep-alive connection before any response byte arrived (the server had
/// closed it) is retried once on a new connection, invisibly to the consumer.
///
/// With ``TransportRequest/waitsForConnectivity``, a connect that fails for lack of a network path waits and tries
/// again, 0.25 s after the first failure and twice as long after each further one, up to 8 s apart.
public final class TransportExchange: ExchangeHandle, Sendable {
    /// The request.
    public let request: TransportRequest
    let consumer: any TransportResponseConsumer
    private let pool: ConnectionPool

    private enum Phase {
        case created
        case waiting
        /// Waiting for a network path before the next connection attempt.
        case awaitingConnectivity
        case leased(any ExchangeExecutor)
        case finished
    }

    /// The timer of the current wait: the deadline of a request queued in the pool (one shared scheduler holds
    /// every queued request's, instead of an event-loop timer, a promise and a future each), or the back-off before
    /// the next connection attempt when there was no network.
    private enum WaitTimer {
        case queued(DeadlineScheduler.Token)
        /// Indirect: rare (no network), and every queued exchange would otherwise carry its room.
        indirect case backOff(Scheduled<Void>)

        func cancel(_ deadlines: DeadlineScheduler) {
            switch self {
            case .queued(let token): deadlines.cancel(token)
            case .backOff(let scheduled): scheduled.cancel()
            }
        }
    }

    private struct State {
        var phase: Phase = .created
        var paused = false
        var retries = 0
        var waitTimer: WaitTimer?
        /// Set by `cancel()` in any phase, so that a cancel racing with a lease or a retry always wins.
        var cancellation: TransferError? {
            get { cancellationBox?.value }
            set { cancellationBox = newValue.map(CopyOnWriteBox.init) }
        }
        /// Out of line: an error takes 40 bytes, and a queued exchange seldom has one.
        private var cancellationBox: CopyOnWriteBox<TransferError>?
        /// Set by `drain`: the consumer hears nothing more, and this runs when the connection is free or closed.
        var drainCompletion: (@Sendable () -> Void)?
        /// Connection attempts that failed for lack of connectivity.
        var connectivityFailures = 0
        /// See ``timeline``.
        var timeline: TimelineBox?
    }

    private let state = Mutex(State())

    /// Filled on the executor's event loop while the exchange runs. Made when first used: a request waiting in the
    /// pool's queue carries none (a timeline is some 300 bytes, and a queue can hold thousands of requests).
    var timeline: TimelineBox {
        state.withLock { state in
            if let timeline = state.timeline { return timeline }
            let made = TimelineBox(TransportTimeline(fetchStart: fetchStart))
            state.timeline = made
            return made
        }
    }

    /// Holds the deadline of a wait in the pool's queue: the pool's (not a property of every exchange, which a queue
    /// of thousands would carry).
    private var deadlines: DeadlineScheduler { pool.deadlines }
    /// When the exchange was made: its timeline's fetch start.
    private let fetchStart = Date()

    init(
        request: TransportRequest, consumer: any TransportResponseConsumer, pool: ConnectionPool
    ) {
        self.request = request
        self.consumer = consumer
        self.pool = pool
    }

    /// Cancels the exchange; the consumer gets `transportDidFail` with `error` unless it already finished.
    public func cancel(_ error: TransferError) {
        enum Next {
            case none
            case failNow
            case cancelOn(any ExchangeExecutor)
        }
        let next: Next = state.withLock { state in
            if state.cancellation == nil { state.cancellation = error }
            switch state.phase {
            case .created, .waiting, .awaitingConnectivity:
                state.phase = .finished
                state.waitTimer?.cancel(deadlines)
                state.waitTimer = nil
                return .failNow
            case .leased(let executor):
                return .cancelOn(executor)
            case .finished:
                return .none
            }
        }
        switch next {
        case .none: break
        case .failNow:
            pool.cancelWaiter(self)
            report(.failure(error))
        case .cancelOn(let executor):
            executor.cancel(self, error: error)
        }
    }

    /// Stops reading the response (backpressure); no timer runs while paused.
    public func pause() { setPaused(true) }

    /// Continues reading after ``pause()``.
    public func resume() { setPaused(false) }

    private func setPaused(_ paused: Bool) {
        let executor: (any ExchangeExecutor)? = state.withLock { state in
            state.paused = paused
            if case .leased(let executor) = state.phase { return executor }
            return nil
        }
        // The handler applies the exchange's state as it is when the hop runs, not this call's value, so pause and
        // resume calls that reach the event loop out of order still end in the latest wish.
        executor?.applyPause(for: self)
    }

    public func drain(limit: Int, then completion: @escaping @Sendable () -> Void) {
        enum Next {
            case done
            case drainOn(any ExchangeExecutor)
        }
        let next: Next = state.withLock { state in
            switch state.phase {
            case .created, .waiting, .awaitingConnectivity:
                state.phase = .finished
                state.waitTimer?.cancel(deadlines)
                state.waitTimer = nil
                return .done
            case .leased(let executor):
                state.drainCompletion = completion
                state.paused = false
                return .drainOn(executor)
            case .finished:
                return .done
            }
        }
        switch next {
        case .done:
            pool.cancelWaiter(self)
            completion()
        case .drainOn(let executor):
            executor.drain(self, limit: limit)
        }
    }

    /// The cancellation asked for, if any (the handler checks it before sending).
    var pendingCancellation: TransferError? { state.withLock { $0.cancellation } }

    // MARK: - Pool and handler side

    var isPausedForHandler: Bool { state.withLock { $0.paused } }

    /// The request waits in the pool's queue. The request timeout covers the wait too: a request that gets
    /// no connection within it fails with `timedOut` instead of waiting forever.
    func markWaiting() {
        // The scheduler's clock (a test's embedded loop runs on its own).
        let deadline = deadlines.loop.now + request.idleTimeout
        state.withLock { state in
            guard case .created = state.phase else { return }
            state.phase = .waiting
            state.waitTimer?.cancel(deadlines)
            // Held strongly: every way out of the wait (a lease, a cancel, a drain, a failure, the deadline) removes
            // the entry.
            state.waitTimer = .queued(deadlines.schedule(at: deadline) { self.waitTimedOut() })
        }
    }

    private func waitTimedOut() {
        let stillWaiting: Bool = state.withLock { state in
            guard case .waiting = state.phase else { return false }
            state.phase = .finished
            state.waitTimer = nil  // fired: nothing to cancel
            return true
        }
        guard stillWaiting else { return }
        pool.cancelWaiter(self)
        report(.failure(.timedOut("no connection to \(request.endpoint) became free in time")))
    }

    /// The pool leased `executor` to this exchange; `false` if the exchange was cancelled meanwhile.
    func attach(_ executor: any ExchangeExecutor) -> Bool {
        state.withLock { state in
            guard state.cancellation == nil else { return false }
            switch state.phase {
            case .created, .waiting:
                state.phase = .leased(executor)
                state.waitTimer?.cancel(deadlines)
                state.waitTimer = nil
                return true
            case .leased, .finished, .awaitingConnectivity:
                return false
            }
        }
    }

    /// The connection for this exchange could not be made. A lack of connectivity is waited out when the request
    /// asks for it; anything else fails the exchange.
    func connectFailed(_ error: TransferError, timerLoop: any EventLoop) {
        guard request.waitsForConnectivity, error.isLackOfConnectivity else {
            connectionFailed(error, retryable: false)
            return
        }
        let isFirst: Bool? = state.withLock { state in
            guard state.cancellation == nil else { return nil }
            switch state.phase {
            case .created, .waiting: break
            case .awaitingConnectivity, .leased, .finished: return nil
            }
            state.waitTimer?.cancel(deadlines)
            state.phase = .awaitingConnectivity
            let delay = TimeAmount.milliseconds(min(8000, 250 << min(state.connectivityFailures, 5)))
            state.connectivityFailures += 1
            state.waitTimer = .backOff(
                timerLoop.scheduleTask(in: delay) { [weak self] in
                    self?.connectivityWaitEnded()
                })
            return state.connectivityFailures == 1
        }
        switch isFirst {
        case .none: connectionFailed(error, retryable: false)
        case .some(true): consumer.transportIsWaitingForConnectivity()
        case .some(false): break
        }
    }

    private func connectivityWaitEnded() {
        let retry: Bool = state.withLock { state in
            guard case .awaitingConnectivity = state.phase, state.cancellation == nil else { return false }
            state.phase = .created
            state.waitTimer = nil
            return true
        }
        if retry { pool.lease(for: self) }
    }

    /// The connection failed this exchange.
    func connectionFailed(_ error: TransferError, retryable: Bool) {
        let retry: Bool? = state.withLock { state in
            if case .finished = state.phase { return nil }
            // A waiter the pool failed: its wait is over (a deadline left behind would end a later wait early).
            state.waitTimer?.cancel(deadlines)
            state.waitTimer = nil
            if retryable && state.retries == 0 && state.cancellation == nil && state.drainCompletion == nil {
                state.retries += 1
                state.phase = .created
                return true
            }
            state.phase = .finished
            return false
        }
        switch retry {
        case .none: break
        case .some(true): pool.lease(for: self)
        case .some(false): report(.failure(error))
        }
    }

    /// The proxy refused the `CONNECT` tunnel: its answer is the exchange's response (without a body: the proxy's
    /// connection is gone), so that the engine's stages see a `407` as for any other request. It keeps only the
    /// proxy's challenges (``TunnelRefusal``): nothing else the proxy said passes for the origin's.
    func tunnelRefused(_ refusal: ProxyTunnelRefusal) {
        let open: Bool = state.withLock { state in
            if case .finished = state.phase { return false }
            state.phase = .finished
            return true
        }
        guard open else { return }
        let head = TransportResponseHead(
            status: refusal.status, reason: refusal.reason, version: "HTTP/1.1",
            headers: TunnelRefusal.responseFields(status: refusal.status, headers: refusal.headers),
            connection: ConnectionInfo(isReused: false, protocolName: "http/1.1"))
        consumer.transportDidReceiveHead(head)
        report(.success(()))
    }

    /// The response ended normally.
    func finish() {
        let wasOpen: Bool = state.withLock { state in
            if case .finished = state.phase { return false }
            state.phase = .finished
            return true
        }
        if wasOpen { report(.success(())) }
    }

    /// The one place the end of the exchange is reported: to the drain's completion when the engine drained it,
    /// else to the consumer. Either way the timeline goes to the consumer first, for observers (a drained redirect's
    /// exchange is one of the task's transactions too).
    private func report(_ result: Result<Void, TransferError>) {
        let completion: (@Sendable () -> Void)? = state.withLock { state in
            defer { state.drainCompletion = nil }
            return state.drainCompletion
        }
        if request.observesTimeline { consumer.transportDidCollect(timeline.withLockedValue { $0 }) }
        if let completion {
            completion()
            return
        }
        switch result {
        case .success: consumer.transportDidFinish()
        case .failure(let error): consumer.transportDidFail(error)
        }
    }
}

extension TransportExchange: Hashable {
    public static func == (lhs: TransportExchange, rhs: TransportExchange) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

/// An exchange's timeline behind an inline lock: filled on the connection's event loop, read when the exchange
/// reports (a class of its own so that a queued exchange carries none of its 300 bytes).
final class TimelineBox: Sendable {
    private let timeline: Mutex<TransportTimeline>

    init(_ timeline: TransportTimeline) {
        self.timeline = Mutex(timeline)
    }

    /// Reads or changes the timeline under its lock.
    func withLockedValue<Result: Sendable>(_ body: (inout TransportTimeline) -> Result) -> Result {
        timeline.withLock { body(&$0) }
    }
}
