import Foundation
import NIOCore
import Synchronization

/// The only code that touches a session's `delegateQueue`.
///
/// Jobs run in the order they were submitted, one at a time, on the delegate queue. Never called under a lock and
/// never waits.
///
/// On a serial queue (the session's own, `OperationQueue.main`, any queue whose `maxConcurrentOperationCount` is 1)
/// every job is an operation of its own, added when the job is submitted, as Darwin adds one per delegate message:
/// the job runs after the app's work queued before it (Alamofire's `cancel()` queues its "explicitly cancelled" mark
/// on the queue's `underlyingQueue` and then cancels the task, whose completion must come after the mark) and before
/// the app's work queued after it (an operation added to "flush" the queue). Batching the jobs of a fast body into
/// fewer operations saved nothing measurable in scenario (d) of `Benchmarks/run.sh` (a data delegate), run against a
/// build that batched (`BASELINE_BIN`).
///
/// A concurrent queue would run such operations side by side, so there a FIFO of jobs is drained by at most one
/// operation at a time: an operation runs only the jobs that were waiting when it was added (so none runs ahead of
/// work queued before it), and the jobs that come later go to the next one, added when it ends.
///
/// The operations ignore `cancel()`: an app that cancels its delegate queue's operations must not lose a task's
/// completion, nor (with the FIFO) leave every later job waiting for a drain that never runs.
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
        enum Placement { case ownOperation, newDrain, waitingDrain }
        let queue = self.queue
        let serial = queue.maxConcurrentOperationCount == 1
        let placement: Placement = state.withLock { state in
            // Jobs still waiting in the FIFO (the queue was concurrent when they came) go first.
            if serial && !state.draining { return .ownOperation }
            state.jobs.append(job)
            if state.draining { return .waitingDrain }
            state.draining = true
            return .newDrain
        }
        switch placement {
        case .ownOperation: queue.addOperation(DelegateOperation(job))
        case .newDrain: schedule(1, on: queue)
        case .waitingDrain: break
        }
    }

    /// Adds the operation that runs the next `count` jobs of the FIFO: all of them were submitted before it was
    /// added.
    private func schedule(_ count: Int, on queue: OperationQueue) {
        queue.addOperation(DelegateOperation { [self] in drain(count) })
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
        if let next { schedule(next, on: queue) }
    }
}

/// An operation that runs one closure and cannot be cancelled (see ``DelegateDispatcher``).
private final class DelegateOperation: Operation, @unchecked Sendable {
    private let body: @Sendable () -> Void

    init(_ body: @escaping @Sendable () -> Void) {
        self.body = body
    }

    override func main() { body() }

    override func cancel() {}
}
