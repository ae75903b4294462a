import Foundation
import NIOConcurrencyHelpers
import Testing

/// A gate that opens once: `wait()` returns when `open()` has been called (at once if it already was), or records an
/// issue and returns after its time limit, so that a test whose event never comes fails instead of hanging the run.
final class AsyncGate: Sendable {
    private struct State {
        var open = false
        var nextWaiter = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = NIOLockedValueBox(State())

    func open() {
        let waiters = state.withLockedValue { state in
            state.open = true
            defer { state.waiters = [:] }
            return state.waiters.values
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Whether `open()` was called.
    var isOpen: Bool { state.withLockedValue { $0.open } }

    /// Waits until the gate opens; after `timeout` records an issue and returns.
    func wait(timeout: Duration = .seconds(60), sourceLocation: SourceLocation = #_sourceLocation) async {
        let id: Int? = state.withLockedValue { state in
            if state.open { return nil }
            state.nextWaiter += 1
            return state.nextWaiter
        }
        guard let id else { return }
        let timer = Task {
            try await Task.sleep(for: timeout)
            let waiter = state.withLockedValue { $0.waiters.removeValue(forKey: id) }
            guard let waiter else { return }
            Issue.record("the gate did not open within \(timeout)", sourceLocation: sourceLocation)
            waiter.resume()
        }
        await withCheckedContinuation { continuation in
            let isOpen = state.withLockedValue { state -> Bool in
                if state.open { return true }
                state.waiters[id] = continuation
                return false
            }
            if isOpen { continuation.resume() }
        }
        timer.cancel()
    }
}
