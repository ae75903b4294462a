import NIOCore

/// `timeoutIntervalForResource`: how long a task may take, not counting time spent suspended. Runs while the
/// task waits for a connection, for the network, or for an answer from the app (a decision never answered is
/// still bound by it). Confined to the engine's executor; the timer fires on the engine's timer loop.
struct ResourceClock {
    private let timeout: TimeAmount
    private var remaining: TimeAmount
    private var runningSince: NIODeadline?
    private var timer: Scheduled<Void>?
    private var onExpiry: (@Sendable () -> Void)?

    init(timeout: TimeAmount) {
        self.timeout = timeout
        self.remaining = timeout
    }

    /// Starts counting (once; later calls do nothing).
    mutating func start(on loop: any EventLoop, onExpiry: @escaping @Sendable () -> Void) {
        guard self.onExpiry == nil else { return }
        self.onExpiry = onExpiry
        resume(on: loop)
    }

    /// Stops counting until ``resume(on:)``.
    mutating func pause(on loop: any EventLoop) {
        guard let since = runningSince else { return }
        timer?.cancel()
        timer = nil
        runningSince = nil
        remaining = remaining - (loop.now - since)
    }

    /// Counts again after ``pause(on:)``.
    mutating func resume(on loop: any EventLoop) {
        guard runningSince == nil, let onExpiry else { return }
        runningSince = loop.now
        timer = loop.scheduleTask(in: max(remaining, .zero)) { onExpiry() }
    }

    /// The task ended.
    mutating func stop() {
        timer?.cancel()
        timer = nil
        runningSince = nil
        onExpiry = nil
    }
}
