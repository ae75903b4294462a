import NIOConcurrencyHelpers
import NIOCore

/// A serial executor for one task's engine: jobs run one at a time, in submission order, never concurrently.
///
/// A job submitted while none runs runs at once on the submitting thread (a response event on an event loop is
/// handled there, without a thread hop); a job submitted while another runs — from any thread, including from
/// inside that job — is queued and run by the thread already draining, after it. The lock guards only the queue:
/// jobs never run under it. Jobs must be short and must not block: they step the task's state machine and start
/// non-blocking work.
final class EngineExecutor: Sendable {
    private struct Queue {
        var jobs = CircularBuffer<@Sendable () -> Void>(initialCapacity: 4)
        var draining = false
    }

    private let queue = NIOLockedValueBox(Queue())

    /// Runs `job` after every job submitted before it.
    func execute(_ job: @escaping @Sendable () -> Void) {
        let drain: Bool = queue.withLockedValue { queue in
            queue.jobs.append(job)
            if queue.draining { return false }
            queue.draining = true
            return true
        }
        guard drain else { return }
        run()
    }

    private func run() {
        while let next = queue.withLockedValue({ queue -> (@Sendable () -> Void)? in
            if let job = queue.jobs.popFirst() { return job }
            queue.draining = false
            return nil
        }) {
            next()
        }
    }
}
