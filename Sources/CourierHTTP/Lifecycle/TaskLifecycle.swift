/// The state machine behind `URLSessionTask.state`, `resume()`, `suspend()` and `cancel()`.
///
/// It owns no I/O: each event returns the action its owner must take, so that the same rules are tested by
/// feeding events and used by the task engine under a lock, acting only after the lock is released.
public struct TaskLifecycle: Sendable, Hashable {
    /// The externally visible state, in the order of Darwin's `URLSessionTask.State`.
    public enum State: Sendable, Hashable {
        case running
        case suspended
        case canceling
        case completed
    }

    /// What the owner must do after an event.
    public enum Action: Sendable, Hashable {
        /// Nothing changes.
        case none
        /// First `resume()`: start the transfer.
        case start
        /// Stop reading from the network and stop the timers.
        case pause
        /// Continue reading and restart the timers.
        case proceed
        /// Cancel a transfer that has started; its completion will follow.
        case cancelTransfer
        /// Cancel a task that never started: report the cancellation as its completion.
        case completeWithoutTransfer
        /// Deliver the task's completion (exactly once).
        case deliverCompletion
    }

    private enum Phase: Sendable, Hashable {
        /// `depth` is how many `resume()` calls it takes to run: `suspend()` and `resume()` nest, as Darwin's
        /// header says ("-suspend and -resume are nestable"), and a new task starts at 1.
        case suspended(started: Bool, depth: Int)
        case running
        case canceling
        case completed
    }

    private var phase: Phase = .suspended(started: false, depth: 1)

    /// A new task: suspended and never started.
    public init() {}

    /// The state reported by `URLSessionTask.state`.
    public var state: State {
        switch phase {
        case .suspended: return .suspended
        case .running: return .running
        case .canceling: return .canceling
        case .completed: return .completed
        }
    }

    /// Whether a session lists the task among its tasks (`getAllTasks`, `getTasksWithCompletionHandler`): it was
    /// resumed at least once and has been neither cancelled nor completed. As on Darwin, a task that was created
    /// but never resumed is not listed, and a cancelled one leaves the list at once, before it completes.
    public var isOutstanding: Bool {
        switch phase {
        case .running, .suspended(started: true, _): return true
        case .suspended(started: false, _), .canceling, .completed: return false
        }
    }

    /// `resume()`: undoes one `suspend()` (a new task counts as suspended once); the one that undoes the last
    /// starts or continues the task. More resumes than suspends do nothing.
    public mutating func resume() -> Action {
        switch phase {
        case .suspended(let started, let depth) where depth > 1:
            phase = .suspended(started: started, depth: depth - 1)
            return .none
        case .suspended(started: false, _):
            phase = .running
            return .start
        case .suspended(started: true, _):
            phase = .running
            return .proceed
        case .running, .canceling, .completed:
            return .none
        }
    }

    /// `suspend()`: the first pauses a running task; each one, also of a task never resumed, takes one more
    /// `resume()` to undo.
    public mutating func suspend() -> Action {
        switch phase {
        case .running:
            phase = .suspended(started: true, depth: 1)
            return .pause
        case .suspended(let started, let depth):
            phase = .suspended(started: started, depth: depth == Int.max ? depth : depth + 1)
            return .none
        case .canceling, .completed:
            return .none
        }
    }

    /// `cancel()`.
    public mutating func cancel() -> Action {
        switch phase {
        case .suspended(started: false, _):
            phase = .canceling
            return .completeWithoutTransfer
        case .suspended(started: true, _), .running:
            phase = .canceling
            return .cancelTransfer
        case .canceling, .completed:
            return .none
        }
    }

    /// The transfer ended (successfully, with an error, or after cancellation).
    public mutating func complete() -> Action {
        switch phase {
        case .completed:
            return .none
        case .suspended, .running, .canceling:
            phase = .completed
            return .deliverCompletion
        }
    }
}
