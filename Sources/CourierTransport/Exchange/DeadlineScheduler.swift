import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Synchronization

/// Deadlines of many tasks and exchanges behind one timer: tasks' resource timeouts, and requests waiting in the
/// pool for a connection.
///
/// Every task has a resource deadline (by default a week away), and scheduling and cancelling an event-loop timer
/// per task (or per queued request) would wake a loop twice per request and allocate a scheduled task, a promise
/// and its future each. Here a task only enters its deadline in a table; one timer runs,
/// for the earliest deadline, and is moved earlier only when a task needs an earlier one. When it fires it calls
/// the actions that are due (outside the lock) and re-arms for the next deadline.
public final class DeadlineScheduler: Sendable {
    /// The process-wide scheduler on the shared event loop group.
    public static let shared = DeadlineScheduler(loop: MultiThreadedEventLoopGroup.singleton.next())

    /// Identifies one registered deadline: the deadline itself, in nanoseconds of uptime, made unique (see
    /// ``schedule(at:_:)``).
    public struct Token: Hashable, Sendable {
        fileprivate let key: UInt64
    }

    /// A struct, not the bare closure: a closure stored as a dictionary's value is re-abstracted, which allocates a
    /// context for every entry.
    private struct Action {
        let run: @Sendable () -> Void
    }

    private struct State {
        /// Each entry's key is its deadline: the table stores 24 bytes a bucket (key and action) where a separate
        /// identifier and deadline took 32, and a queue of thousands of requests holds two entries each.
        var entries: [UInt64: Action] = [:]
        /// The clock's reading at the latest firing: every key up to it has fired, and no new entry is given one
        /// (a new deadline that is already due is kept just after it). A token is its key, and its owner may still
        /// cancel it after it fired (a cancel racing the firing): that must not remove a newer entry.
        var firedThrough: UInt64 = 0
        /// When the armed timer fires, if one is armed.
        var armedAt: NIODeadline?
        var timer: Scheduled<Void>?
    }

    public let loop: any EventLoop
    private let state = Mutex(State())

    public init(loop: any EventLoop) {
        self.loop = loop
    }

    /// Calls `action` (on the scheduler's loop) at `deadline`, unless cancelled first. A deadline already taken by
    /// another entry moves on by a nanosecond until it is free (two deadlines in the same nanosecond are rare on a
    /// real clock; a test's embedded clock may give several), and one at or before the latest firing is kept just
    /// after it, so that no token is ever given twice.
    public func schedule(at deadline: NIODeadline, _ action: @escaping @Sendable () -> Void) -> Token {
        state.withLock { state in
            // Clamped far below the top, so that moving on can never wrap round to a deadline in the past.
            var key = max(min(deadline.uptimeNanoseconds, Self.latestKey), state.firedThrough + 1)
            while state.entries[key] != nil { key += 1 }
            state.entries[key] = Action(run: action)
            let deadline = NIODeadline.uptimeNanoseconds(key)
            if state.armedAt.map({ deadline < $0 }) ?? true {
                arm(&state, at: deadline)
            }
            return Token(key: key)
        }
    }

    /// Forgets a deadline (the task ended or paused its clock). The armed timer is left alone: when it fires
    /// with nothing due, it only re-arms.
    public func cancel(_ token: Token) {
        state.withLock { _ = $0.entries.removeValue(forKey: token.key) }
    }

    /// About 292 years of uptime less 4 seconds: later deadlines are kept as this one.
    private static let latestKey = UInt64(Int64.max) - UInt64(UInt32.max)

    /// The number of registered deadlines (for tests).
    public var count: Int { state.withLock { $0.entries.count } }

    private func arm(_ state: inout State, at deadline: NIODeadline) {
        state.timer?.cancel()
        state.armedAt = deadline
        state.timer = loop.scheduleTask(deadline: deadline) { [self] in fire() }
    }

    private func fire() {
        let now = loop.now
        let due: [@Sendable () -> Void] = state.withLock { state in
            state.timer = nil
            state.armedAt = nil
            state.firedThrough = max(state.firedThrough, now.uptimeNanoseconds)
            // The due keys are collected first and removed after: removing while iterating would copy the whole
            // table (the loop holds a reference to it), thousands of entries for one due deadline.
            var dueKeys: [UInt64] = []
            var next: UInt64?
            for key in state.entries.keys {
                if key <= now.uptimeNanoseconds {
                    dueKeys.append(key)
                } else if next.map({ key < $0 }) ?? true {
                    next = key
                }
            }
            let due = dueKeys.compactMap { state.entries.removeValue(forKey: $0)?.run }
            if let next { arm(&state, at: .uptimeNanoseconds(next)) }
            return due
        }
        for action in due { action() }
    }
}
