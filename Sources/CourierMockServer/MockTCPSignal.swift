import NIOConcurrencyHelpers

/// Something a test does that a ``MockTCPServer`` script waits for: the script stops at ``MockTCPStep/waitForSignal(_:)``
/// until the test calls ``fire()``. For a server that must answer only once the client reached a state (a task
/// suspended, a transfer stalled), which a fixed ``MockTCPStep/wait(_:)`` only guesses at, and a loaded machine can
/// outlast.
public final class MockTCPSignal: Sendable, Equatable {
    private let state = NIOLockedValueBox(State())

    private struct State {
        var fired = false
        var waiters: [@Sendable () -> Void] = []
    }

    /// A signal not fired yet.
    public init() {}

    /// Lets every script waiting for this signal go on; a script that reaches its step later goes on at once.
    public func fire() {
        let waiters = state.withLockedValue { state in
            state.fired = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter() }
    }

    /// Runs `body` once the signal is fired (now, if it was).
    func whenFired(_ body: @escaping @Sendable () -> Void) {
        let firedAlready = state.withLockedValue { state in
            if !state.fired { state.waiters.append(body) }
            return state.fired
        }
        if firedAlready { body() }
    }

    /// The same signal.
    public static func == (lhs: MockTCPSignal, rhs: MockTCPSignal) -> Bool { lhs === rhs }
}
