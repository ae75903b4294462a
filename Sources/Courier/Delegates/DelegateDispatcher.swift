import Foundation
import NIOCore
import Synchronization

/// The only code that touches a session's `delegateQueue`.
///
/// Jobs run in the order they were submitted, one at a time, on the delegate queue. Never called under a lock and
/// never waits.
///
/// On a serial queue the app holds (one it gave, `OperationQueue.main`, or the session's own once read through
/// `delegateQueue`) every job is an operation of its own, added when the job is submitted, as Darwin adds one per
/// delegate message: the job runs after the app's work queued before it (Alamofire's `cancel()` queues its
/// "explicitly cancelled" mark on the queue's `underlyingQueue` and then cancels the task, whose completion must come
/// after the mark) and before the app's work queued after it (an operation added to "flush" the queue).
///
/// Elsewhere a FIFO of jobs is drained by at most one operation at a time: on a concurrent queue, which would run
/// operations side by side, and on the session's own queue while the app has not seen it, where no other work can
/// come between jobs and a burst of them (the pieces of a fast body) costs one operation rather than one each. An
/// operation runs only the jobs that were waiting when it was added (so none runs ahead of work queued before it),
/// and the jobs that come later go to the next one, added when it ends.
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

    /// The delegate queue (`nil` until the session's own is made), and whether the app holds it: it gave it, or read
    /// the session's own through `delegateQueue`, so its own work may come between jobs.
    private let queueState: Mutex<(queue: OperationQueue?, appHolds: Bool)>
    private let state = Mutex<(jobs: CircularBuffer<@Sendable () -> Void>, draining: Bool)>(
        (CircularBuffer(initialCapacity: 16), false)
    )

    /// - Parameter queue: The queue the user gave; `nil` for a serial queue of the session's own, made at first use.
    init(queue: OperationQueue?) {
        queueState = Mutex((queue, queue != nil))
    }

    /// The delegate queue as the app sees it (`URLSession.delegateQueue`): the given one, or the session's own
    /// (made now if it was not yet), which from now on the app may put work on.
    var queue: OperationQueue { resolvedQueue(forApp: true).queue }

    /// Whether the queue exists yet (it always does when the user gave one).
    var hasQueue: Bool { queueState.withLock { $0.queue != nil } }

    private func resolvedQueue(forApp: Bool) -> (queue: OperationQueue, appHolds: Bool) {
        queueState.withLock { state in
            if forApp { state.appHolds = true }
            if let queue = state.queue { return (queue, state.appHolds) }
            let made = OperationQueue()
            made.maxConcurrentOperationCount = 1
            made.name = "courier.session.delegate"
            state.queue = made
            return (made, state.appHolds)
        }
    }

    /// Runs `job` on the delegate queue after every job submitted before it.
    func async(_ job: @escaping @Sendable () -> Void) {
        enum Placement { case ownOperation, newDrain, waitingDrain }
        let (queue, appHolds) = resolvedQueue(forApp: false)
        let oneEach = appHolds && queue.maxConcurrentOperationCount == 1
        let placement: Placement = state.withLock { state in
            // Jobs still waiting in the FIFO (from before the app held the queue, or while it was concurrent) go
            // first.
            if oneEach && !state.draining { return .ownOperation }
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
        if let next { schedule(next, on: resolvedQueue(forApp: false).queue) }
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
