import Foundation
import NIOCore
import Synchronization

/// The only code that touches a session's `delegateQueue`.
///
/// Jobs run in the order they were submitted, one at a time, on the delegate queue, even when the user gave a
/// concurrent queue: a FIFO of jobs is drained by at most one operation at a time. Never called under a lock
/// and never waits: submitting only appends to the FIFO.
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
        let startDrain: Bool = state.withLock { state in
            state.jobs.append(job)
            if state.draining { return false }
            state.draining = true
            return true
        }
        if startDrain { scheduleDrain() }
    }

    private func scheduleDrain() {
        queue.addOperation { [self] in drain() }
    }

    private func drain() {
        for _ in 0..<Self.batchLimit {
            let job: (@Sendable () -> Void)? = state.withLock { state in
                if let job = state.jobs.popFirst() { return job }
                state.draining = false
                return nil
            }
            guard let job else { return }
            job()
        }
        scheduleDrain()
    }
}
