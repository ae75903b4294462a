import Testing

@testable import Courier

/// ``EngineJobQueue``, the jobs an engine's executor holds while one runs: first in, first out, a taken job is not
/// kept alive by the queue, and a queue that never quite empties does not grow.
@Suite("Engine job queue")
struct EngineJobQueueTests {
    private final class Payload: Sendable {}

    @Test func jobsComeOutInTheOrderTheyWentIn() {
        var queue = EngineJobQueue<Int>()
        #expect(queue.popFirst() == nil)
        var taken: [Int] = []
        var next = 0
        // Interleaved: two in, one out, a hundred times, then everything out.
        for _ in 0..<100 {
            queue.append(next)
            queue.append(next + 1)
            next += 2
            if let job = queue.popFirst() { taken.append(job) }
        }
        while let job = queue.popFirst() { taken.append(job) }
        #expect(taken == Array(0..<200))
        #expect(queue.storedCount == 0)
    }

    @Test func aTakenJobIsReleasedAtOnce() {
        var queue = EngineJobQueue<Payload>()
        weak var first: Payload?
        do {
            let payload = Payload()
            first = payload
            queue.append(payload)
        }
        queue.append(Payload())
        // The queue still holds the second job, so its array is not emptied: the first's slot must be cleared.
        _ = queue.popFirst()
        #expect(first == nil)
        #expect(queue.popFirst() != nil)
    }

    @Test func aQueueThatNeverEmptiesStaysSmall() {
        var queue = EngineJobQueue<Int>()
        queue.append(0)
        for job in 1...10_000 {
            queue.append(job)
            #expect(queue.popFirst() == job - 1)
        }
        #expect(queue.storedCount <= 40)
        #expect(queue.popFirst() == 10_000)
    }
}
