import NIOConcurrencyHelpers
import Synchronization

/// The unfinished tasks of a session and its invalidation flag; the only lock on the task path besides each
/// task's own.
final class TaskRegistry: Sendable {
    private struct State {
        var tasks: [Int: URLSessionTask] = [:]
        var nextIdentifier = 1
        var invalidated = false
        var invalidationDelivered = false
    }

    private let state = Mutex(State())

    /// A new task identifier, unique in the session.
    func nextIdentifier() -> Int {
        state.withLock { state in
            defer { state.nextIdentifier += 1 }
            return state.nextIdentifier
        }
    }

    /// Makes the next identifier at least `next` (a background session continues the daemon's numbering).
    func advanceIdentifiers(to next: Int) {
        state.withLock { $0.nextIdentifier = max($0.nextIdentifier, next) }
    }

    /// Adds `task`; `false` if the session is invalidated.
    func insert(_ task: URLSessionTask) -> Bool {
        state.withLock { state in
            if state.invalidated { return false }
            state.tasks[task.taskIdentifier] = task
            return true
        }
    }

    /// Removes `task`; `true` when this made an invalidated session empty (time to report invalidation).
    func remove(_ task: URLSessionTask) -> Bool {
        state.withLock { state in
            guard state.tasks.removeValue(forKey: task.taskIdentifier) != nil else { return false }
            return takeInvalidationIfDue(&state)
        }
    }

    /// Puts `new` in place of `old` in one step, also on an invalidated session: a data task that becomes a
    /// download task hands over its place, so the session's invalidation waits for the download.
    func replace(_ old: URLSessionTask, with new: URLSessionTask) {
        state.withLock { state in
            state.tasks.removeValue(forKey: old.taskIdentifier)
            state.tasks[new.taskIdentifier] = new
        }
    }

    /// Marks the session invalidated; `true` when no task is left (time to report invalidation).
    func invalidate() -> Bool {
        state.withLock { state in
            if state.invalidated { return false }
            state.invalidated = true
            return takeInvalidationIfDue(&state)
        }
    }

    /// The unfinished tasks, in creation order.
    func allTasks() -> [URLSessionTask] {
        state.withLock { state in
            state.tasks.values.sorted { $0.taskIdentifier < $1.taskIdentifier }
        }
    }

    private func takeInvalidationIfDue(_ state: inout State) -> Bool {
        guard state.invalidated, state.tasks.isEmpty, !state.invalidationDelivered else { return false }
        state.invalidationDelivered = true
        return true
    }
}
