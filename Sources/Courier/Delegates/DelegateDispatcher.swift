import Foundation
import NIOCore
import Synchronization

/// The only code that touches a session's `delegateQueue`.
///
/// Jobs run in the order they were submitted, one at a time, on the delegate queue, even when the user gave a
/// concurrent queue: a FIFO of jobs is drained by at most one operation at a time. Never called under a lock
/// and never waits: submitting only appends to the FIFO.
///
/// A job never runs ahead of work the app put on the queue (or on its `underlyingQueue`) before the job was
/// submitted, as on Darwin, where every delegate message is an operation of its own: an operation runs only the jobs
/// that were in the FIFO when it was added, and the jobs that came later go to the next one, added when it ends.
/// Alamofire relies on this: its `cancel()` puts the request's "explicitly cancelled" mark on the queue and then
/// cancels the task, and the task's completion must come after the mark. Jobs that pile up while an operation runs
/// (the pieces of a fast body) still go together in the next one.
///
/// A session given no queue gets a serial one of its own, made when first needed (a job, or a read of
/// `delegateQueue`): a session used only through its async methods, without a delegate, never needs one, and an
/// `OperationQueue` costs its creation and teardown (6 % of the CPU of a session per request) and the pages of
/// Foundation's operation code.
final class DelegateDispatcher: Sendable {
    /// Jobs run per queued operation before yielding the queue to others.
    private static let batchLimit = 64

    private let givenOrMade: Mutex<OperationQueue?>
    private let state = Mutex<(jobs: CircularBuffer<@Sendable () -> Void>, draining: Bool)>(
        (CircularBuffer(initialCapacity: 16), false)
    )

    /// - Parameter queue: The queue the user gave; `nil` for a serial queue of the session's own, made at first use.
    init(queue: OperationQueue?) {
        givenOrMade = Mutex(queue)
    }

    /// The delegate queue: the given one, or the session's own (made now if it was not yet).
    var queue: OperationQueue {
        givenOrMade.withLock { queue in
            if let queue { return queue }
            let made = OperationQueue()
            made.maxConcurrentOperationCount = 1
            made.name = "courier.session.delegate"
            queue = made
            return made
        }
    }

    /// Whether the queue exists yet (it always does when the user gave one).
    var hasQueue: Bool { givenOrMade.withLock { $0 != nil } }

    /// Runs `job` on the delegate queue after every job submitted before it.
    func async(_ job: @escaping @Sendable () -> Void) {
        let batch: Int? = state.withLock { state in
            state.jobs.append(job)
            if state.draining { return nil }
            state.draining = true
            return 1
        }
        if let batch { schedule(batch) }
    }

    /// Adds the operation that runs the next `count` jobs: all of them were submitted before it was added.
    private func schedule(_ count: Int) {
        queue.addOperation { [self] in drain(count) }
    }

    private func drain(_ count: Int) {
        for _ in 0..<count {
            // Only a drain pops, and one runs at a time: the jobs it was scheduled for are all still there.
            state.withLock { $0.jobs.popFirst() }?()
        }
        let next: Int? = state.withLock { state in
            if state.jobs.isEmpty {
                state.draining = false
                return nil
            }
            return min(state.jobs.count, Self.batchLimit)
        }
        if let next { schedule(next) }
    }
}
