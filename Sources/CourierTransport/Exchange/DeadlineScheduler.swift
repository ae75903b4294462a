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

    /// Identifies one registered deadline.
    public struct Token: Hashable, Sendable {
        fileprivate let id: UInt64
    }

    private struct Entry {
        var deadline: NIODeadline
        var action: @Sendable () -> Void
    }

    private struct State {
        var entries: [UInt64: Entry] = [:]
        var nextID: UInt64 = 0
        /// When the armed timer fires, if one is armed.
        var armedAt: NIODeadline?
        var timer: Scheduled<Void>?
    }

    public let loop: any EventLoop
    private let state = Mutex(State())

    public init(loop: any EventLoop) {
        self.loop = loop
    }

    /// Calls `action` (on the scheduler's loop) at `deadline`, unless cancelled first.
    public func schedule(at deadline: NIODeadline, _ action: @escaping @Sendable () -> Void) -> Token {
        state.withLock { state in
            state.nextID += 1
            let id = state.nextID
            state.entries[id] = Entry(deadline: deadline, action: action)
            if state.armedAt.map({ deadline < $0 }) ?? true {
                arm(&state, at: deadline)
            }
            return Token(id: id)
        }
    }

    /// Forgets a deadline (the task ended or paused its clock). The armed timer is left alone: when it fires
    /// with nothing due, it only re-arms.
    public func cancel(_ token: Token) {
        state.withLock { _ = $0.entries.removeValue(forKey: token.id) }
    }

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
            var due: [@Sendable () -> Void] = []
            var next: NIODeadline?
            for (id, entry) in state.entries {
                if entry.deadline <= now {
                    due.append(entry.action)
                    state.entries[id] = nil
                } else if next.map({ entry.deadline < $0 }) ?? true {
                    next = entry.deadline
                }
            }
            if let next { arm(&state, at: next) }
            return due
        }
        for action in due { action() }
    }
}
