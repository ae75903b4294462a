import CourierHTTP
import NIOConcurrencyHelpers
import NIOCore

/// One request on its way through the pool: the handle the task engine uses to cancel, pause and resume it.
///
/// A request that fails on a reused keep-alive connection before any response byte arrived (the server had
/// closed it) is retried once on a new connection, invisibly to the consumer.
public final class TransportExchange: Sendable {
    /// The request.
    public let request: TransportRequest
    let consumer: any TransportResponseConsumer
    private let pool: ConnectionPool

    private enum Phase {
        case created
        case waiting
        case leased(HTTP1Connection)
        case finished
    }

    private struct State {
        var phase: Phase = .created
        var paused = false
        var retries = 0
        var waitTimer: Scheduled<Void>?
        /// Set by `cancel()` in any phase, so that a cancel racing with a lease or a retry always wins.
        var cancellation: TransferError?
    }

    private let state = NIOLockedValueBox(State())

    init(request: TransportRequest, consumer: any TransportResponseConsumer, pool: ConnectionPool) {
        self.request = request
        self.consumer = consumer
        self.pool = pool
    }

    /// Cancels the exchange; the consumer gets `transportDidFail` with `error` unless it already finished.
    public func cancel(_ error: TransferError = .cancelled()) {
        enum Next {
            case none
            case failNow
            case cancelOn(HTTP1Connection)
        }
        let next: Next = state.withLockedValue { state in
            if state.cancellation == nil { state.cancellation = error }
            switch state.phase {
            case .created, .waiting:
                state.phase = .finished
                state.waitTimer?.cancel()
                state.waitTimer = nil
                return .failNow
            case .leased(let connection):
                return .cancelOn(connection)
            case .finished:
                return .none
            }
        }
        switch next {
        case .none: break
        case .failNow:
            pool.cancelWaiter(self)
            consumer.transportDidFail(error)
        case .cancelOn(let connection):
            connection.cancel(self, error: error)
        }
    }

    /// Stops reading the response (backpressure); no timer runs while paused.
    public func pause() { setPaused(true) }

    /// Continues reading after ``pause()``.
    public func resume() { setPaused(false) }

    private func setPaused(_ paused: Bool) {
        let connection: HTTP1Connection? = state.withLockedValue { state in
            state.paused = paused
            if case .leased(let connection) = state.phase { return connection }
            return nil
        }
        // The handler applies the exchange's state as it is when the hop runs, not this call's value, so pause and
        // resume calls that reach the event loop out of order still end in the latest wish.
        connection?.applyPause(for: self)
    }

    /// The cancellation asked for, if any (the handler checks it before sending).
    var pendingCancellation: TransferError? { state.withLockedValue { $0.cancellation } }

    // MARK: - Pool and handler side

    var isPausedForHandler: Bool { state.withLockedValue { $0.paused } }

    /// The request waits in the pool's queue. The request timeout covers the wait too: a request that gets
    /// no connection within it fails with `timedOut` instead of waiting forever.
    func markWaiting(timerLoop: any EventLoop) {
        var timeout = request.idleTimeout
        if let deadline = request.resourceDeadline {
            timeout = min(timeout, max(.zero, deadline - .now()))
        }
        state.withLockedValue { state in
            guard case .created = state.phase else { return }
            state.phase = .waiting
            state.waitTimer = timerLoop.scheduleTask(in: timeout) { [weak self] in
                self?.waitTimedOut()
            }
        }
    }

    private func waitTimedOut() {
        let stillWaiting: Bool = state.withLockedValue { state in
            guard case .waiting = state.phase else { return false }
            state.phase = .finished
            return true
        }
        guard stillWaiting else { return }
        pool.cancelWaiter(self)
        consumer.transportDidFail(.timedOut("no connection to \(request.endpoint) became free in time"))
    }

    /// The pool leased `connection` to this exchange; `false` if the exchange was cancelled meanwhile.
    func attach(_ connection: HTTP1Connection) -> Bool {
        state.withLockedValue { state in
            guard state.cancellation == nil else { return false }
            switch state.phase {
            case .created, .waiting:
                state.phase = .leased(connection)
                state.waitTimer?.cancel()
                state.waitTimer = nil
                return true
            case .leased, .finished:
                return false
            }
        }
    }

    /// The connection failed this exchange.
    func connectionFailed(_ error: TransferError, retryable: Bool) {
        let retry: Bool? = state.withLockedValue { state in
            if case .finished = state.phase { return nil }
            if retryable && state.retries == 0 && state.cancellation == nil {
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
        case .some(false): consumer.transportDidFail(error)
        }
    }

    /// The response ended normally.
    func finish() {
        let wasOpen: Bool = state.withLockedValue { state in
            if case .finished = state.phase { return false }
            state.phase = .finished
            return true
        }
        if wasOpen { consumer.transportDidFinish() }
    }
}

extension TransportExchange: Hashable {
    public static func == (lhs: TransportExchange, rhs: TransportExchange) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
