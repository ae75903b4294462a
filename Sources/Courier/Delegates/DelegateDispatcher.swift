import Foundation
import NIOCore
import Synchronization

/// The only code that touches a session's `delegateQueue`.
///
/// Jobs run in the order they were submitted, one at a time, on the delegate queue, even when the user gave a
/// concurrent queue: a FIFO of jobs is drained by at most one operation at a time. Never called under a lock
/// and never waits: submitting only appends to the FIFO.
final class DelegateDispatcher: Sendable {
    /// Jobs run per queued operation before yielding the queue to others.
    private static let batchLimit = 64

    let queue: OperationQueue
    private let state = Mutex<(jobs: CircularBuffer<@Sendable () -> Void>, draining: Bool)>(
        (CircularBuffer(initialCapacity: 16), false)
    )

    init(queue: OperationQueue) {
        self.queue = queue
    }

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
