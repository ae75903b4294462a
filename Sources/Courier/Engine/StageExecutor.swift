import Dispatch

/// Where the waiting parts of stages run: a task executor of Courier's own, so that a delegate decision or a
/// storage read is never stuck behind an app's busy Swift concurrency pool (an app that keeps the global pool
/// busy would otherwise delay every redirect and `didReceive response` answer).
///
/// Stages run user code here (`URLProtocol.canInit`, `HTTPCookieStorage` subclasses): never on an event loop,
/// never under a lock. Jobs run on a concurrent dispatch queue, whose threads dispatch adds when others block.
final class StageExecutor: TaskExecutor {
    /// The executor every engine uses.
    static let shared = StageExecutor()

    private let queue = DispatchQueue(label: "courier.stages", attributes: .concurrent)

    func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async {
            unowned.runSynchronously(on: executor)
        }
    }
}
