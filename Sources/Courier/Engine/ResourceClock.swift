import CourierTransport
import NIOCore

/// `timeoutIntervalForResource`: how long a task may take, not counting time spent suspended. Runs while the
/// task waits for a connection, for the network, or for an answer from the app (a decision never answered is
/// still bound by it). Confined to the engine's executor; the deadline lives in a ``DeadlineScheduler``, so a
/// task does not cost an event-loop timer of its own.
///
/// Every engine carries one, including the thousands a session may hold queued, so it keeps only what it must
/// (32 bytes): the engine passes the scheduler and the expiry action with each call instead of the clock storing
/// them.
struct ResourceClock {
    private enum State {
        case notStarted
        case running(since: NIODeadline, DeadlineScheduler.Token)
        case paused
        case stopped
    }

    private var remaining: TimeAmount
    private var state = State.notStarted

    init(timeout: TimeAmount) {
        self.remaining = timeout
    }

    /// Starts counting (once; later calls do nothing). `onExpiry` runs on the scheduler's loop.
    mutating func start(on scheduler: DeadlineScheduler, onExpiry: @escaping @Sendable () -> Void) {
        guard case .notStarted = state else { return }
        state = .paused
        resume(on: scheduler, onExpiry: onExpiry)
    }

    /// Stops counting until ``resume(on:onExpiry:)``.
    mutating func pause(on scheduler: DeadlineScheduler) {
        guard case .running(let since, let token) = state else { return }
        scheduler.cancel(token)
        state = .paused
        remaining = remaining - (scheduler.loop.now - since)
    }

    /// Counts again after ``pause(on:)`` (nothing before ``start(on:onExpiry:)`` or after ``stop(on:)``).
    mutating func resume(on scheduler: DeadlineScheduler, onExpiry: @escaping @Sendable () -> Void) {
        guard case .paused = state else { return }
        let now = scheduler.loop.now
        state = .running(since: now, scheduler.schedule(at: now + max(remaining, .zero), onExpiry))
    }

    /// The task ended.
    mutating func stop(on scheduler: DeadlineScheduler) {
        if case .running(_, let token) = state { scheduler.cancel(token) }
        state = .stopped
    }
}
