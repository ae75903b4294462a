import NIOCore
import Synchronization

/// A serial executor for one task's engine: jobs run one at a time, in submission order, never concurrently.
///
/// A job submitted while none runs runs at once on the submitting thread (a response event on an event loop is
/// handled there, without a thread hop); a job submitted while another runs — from any thread, including from
/// inside that job — is queued and run by the thread already draining, after it. The lock guards only the queue:
/// jobs never run under it. Jobs must be short and must not block: they step the task's state machine and start
/// non-blocking work.
///
/// Jobs are values (the engine's ``TaskEngine/Job``), not closures, and the uncontended path queues nothing: a
/// response's head, body part and end each cost no allocation here. The lock is a `Mutex` stored inline in the
/// engine (no lock object of its own to allocate, initialise and destroy for every task). Every caller passes the
/// same `run` (the engine's job handler), so a job queued by one thread may run on another's.
struct EngineExecutor<Job: Sendable>: ~Copyable, Sendable {
    private let queue = Mutex(EngineJobQueue<Job>())

    init() {}

    /// Runs `job` with `run` after every job submitted before it: at once when no job runs, else later on the
    /// thread that runs the current one.
    func execute(_ job: Job, _ run: (Job) -> Void) {
        let runsNow: Bool = queue.withLock { queue in
            if queue.draining {
                queue.append(job)
                return false
            }
            queue.draining = true
            return true
        }
        guard runsNow else { return }
        run(job)
        while let next = queue.withLock({ queue -> Job? in
            if let job = queue.popFirst() { return job }
            queue.draining = false
            return nil
        }) {
            run(next)
        }
    }
}

/// The jobs an ``EngineExecutor`` holds while one runs. (Not nested in the executor: a private type nested in a
/// generic noncopyable struct crashes the 6.3 compiler.)
///
/// An array read from `head`: 13 bytes inline where a `CircularBuffer` takes 25, in an engine every queued task
/// carries. A taken job's slot is cleared at once (a body part's buffer is not kept alive by the queue); the array
/// is emptied, keeping its capacity, when the last job is taken, and its taken front is cut off when it is most of
/// the array, so that a queue that never quite empties does not grow.
struct EngineJobQueue<Job: Sendable>: Sendable {
    /// Allocated at the first contention; most tasks never need it.
    private var jobs: [Job?] = []
    private var head: UInt32 = 0
    var draining = false

    /// The array's length, taken slots included (for tests: it must not grow with a queue that never empties).
    var storedCount: Int { jobs.count }

    mutating func append(_ job: Job) {
        if head >= 16, Int(head) * 2 >= jobs.count {
            jobs.removeFirst(Int(head))
            head = 0
        }
        jobs.append(job)
    }

    mutating func popFirst() -> Job? {
        guard Int(head) < jobs.count else { return nil }
        let job = jobs[Int(head)].take()
        head += 1
        if Int(head) == jobs.count {
            jobs.removeAll(keepingCapacity: true)
            head = 0
        }
        return job
    }
}
