import CourierTransport
import NIOCore

/// `timeoutIntervalForResource`: how long a task may take, not counting time spent suspended. Runs while the
/// task waits for a connection, for the network, or for an answer from the app (a decision never answered is
/// still bound by it). Confined to the engine's executor; the deadline lives in a ``DeadlineScheduler``, so a
/// task does not cost an event-loop timer of its own.
struct ResourceClock {
    private let scheduler: DeadlineScheduler
    private var remaining: TimeAmount
    private var runningSince: NIODeadline?
    private var token: DeadlineScheduler.Token?
    private var onExpiry: (@Sendable () -> Void)?

    init(timeout: TimeAmount, scheduler: DeadlineScheduler) {
        self.scheduler = scheduler
        self.remaining = timeout
    }

    /// Starts counting (once; later calls do nothing).
    mutating func start(onExpiry: @escaping @Sendable () -> Void) {
        guard self.onExpiry == nil else { return }
        self.onExpiry = onExpiry
        resume()
    }

    /// Stops counting until ``resume()``.
    mutating func pause() {
        guard let since = runningSince else { return }
        if let token { scheduler.cancel(token) }
        token = nil
        runningSince = nil
        remaining = remaining - (scheduler.loop.now - since)
    }

    /// Counts again after ``pause()``.
    mutating func resume() {
        guard runningSince == nil, let onExpiry else { return }
        let now = scheduler.loop.now
        runningSince = now
        token = scheduler.schedule(at: now + max(remaining, .zero), onExpiry)
    }

    /// The task ended.
    mutating func stop() {
        if let token { scheduler.cancel(token) }
        token = nil
        runningSince = nil
        onExpiry = nil
    }
}
