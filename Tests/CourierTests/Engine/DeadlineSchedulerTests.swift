import CourierTransport
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import Testing

@testable import Courier

/// ``DeadlineScheduler`` and ``ResourceClock`` on an embedded loop whose time only moves when the test says so.
@Suite("Resource deadlines")
struct DeadlineSchedulerTests {
    private final class Fired: Sendable {
        private let box = NIOLockedValueBox<[String]>([])
        var names: [String] { box.withLockedValue { $0 } }
        func add(_ name: String) { box.withLockedValue { $0.append(name) } }
    }

    /// Deadlines fire in time order, a later one after an earlier one re-arms the timer, and a cancelled one never
    /// fires.
    @Test func deadlinesFireInOrderAndCancelledOnesNever() {
        let loop = EmbeddedEventLoop()
        let scheduler = DeadlineScheduler(loop: loop)
        let fired = Fired()
        let start = loop.now
        _ = scheduler.schedule(at: start + .seconds(5)) { fired.add("late") }
        let cancelled = scheduler.schedule(at: start + .seconds(2)) { fired.add("cancelled") }
        _ = scheduler.schedule(at: start + .seconds(1)) { fired.add("early") }
        scheduler.cancel(cancelled)
        #expect(scheduler.count == 2)
        loop.advanceTime(by: .seconds(1))
        #expect(fired.names == ["early"])
        loop.advanceTime(by: .seconds(3))
        #expect(fired.names == ["early"])
        loop.advanceTime(by: .seconds(1))
        #expect(fired.names == ["early", "late"])
        #expect(scheduler.count == 0)
    }

    /// Deadlines at the same instant are separate entries (each deadline is its entry's key, moved on by a
    /// nanosecond when taken): both fire, and cancelling one leaves the other. So do deadlines beyond any clock.
    @Test func deadlinesAtTheSameInstantAreKeptApart() {
        let loop = EmbeddedEventLoop()
        let scheduler = DeadlineScheduler(loop: loop)
        let fired = Fired()
        let at = loop.now + .seconds(1)
        _ = scheduler.schedule(at: at) { fired.add("first") }
        let second = scheduler.schedule(at: at) { fired.add("second") }
        _ = scheduler.schedule(at: at) { fired.add("third") }
        _ = scheduler.schedule(at: .distantFuture) { fired.add("never") }
        _ = scheduler.schedule(at: .distantFuture) { fired.add("never") }
        #expect(scheduler.count == 5)
        scheduler.cancel(second)
        #expect(scheduler.count == 4)
        loop.advanceTime(by: .seconds(1))
        #expect(fired.names == ["first"])
        // The third was kept two nanoseconds later (the second had taken the first nanosecond after).
        loop.advanceTime(by: .nanoseconds(2))
        #expect(fired.names == ["first", "third"])
        #expect(scheduler.count == 2)
    }

    /// A token is its deadline: one cancelled after it fired (its owner's cancel racing the firing) must not take
    /// out a newer entry scheduled for the same instant. Such an entry is kept just after the firing instead.
    @Test func aTokenCancelledAfterItFiredLeavesANewerEntryAlone() {
        let loop = EmbeddedEventLoop()
        let scheduler = DeadlineScheduler(loop: loop)
        let fired = Fired()
        let at = loop.now + .seconds(1)
        let first = scheduler.schedule(at: at) { fired.add("first") }
        loop.advanceTime(by: .seconds(1))
        #expect(fired.names == ["first"])
        _ = scheduler.schedule(at: at) { fired.add("second") }
        scheduler.cancel(first)
        #expect(scheduler.count == 1)
        loop.advanceTime(by: .nanoseconds(1))
        #expect(fired.names == ["first", "second"])
    }

    /// Time spent paused does not count: a 3 s clock paused for 10 s after 2 s fires 1 s after it resumes.
    @Test func aPausedClockDoesNotCountThePause() {
        let loop = EmbeddedEventLoop()
        let scheduler = DeadlineScheduler(loop: loop)
        let fired = Fired()
        var clock = ResourceClock(timeout: .seconds(3))
        clock.start(on: scheduler) { fired.add("expired") }
        loop.advanceTime(by: .seconds(2))
        clock.pause(on: scheduler)
        loop.advanceTime(by: .seconds(10))
        #expect(fired.names.isEmpty)
        clock.resume(on: scheduler) { fired.add("expired") }
        loop.advanceTime(by: .milliseconds(900))
        #expect(fired.names.isEmpty)
        loop.advanceTime(by: .milliseconds(100))
        #expect(fired.names == ["expired"])
    }

    /// A stopped clock leaves nothing in the scheduler (a finished task's deadline must not keep its engine).
    @Test func aStoppedClockLeavesNoEntry() {
        let loop = EmbeddedEventLoop()
        let scheduler = DeadlineScheduler(loop: loop)
        var clock = ResourceClock(timeout: .seconds(3))
        clock.start(on: scheduler) {}
        #expect(scheduler.count == 1)
        clock.stop(on: scheduler)
        #expect(scheduler.count == 0)
        // Nothing brings a stopped clock back: a late resume (a suspend racing the end) schedules nothing.
        clock.resume(on: scheduler) {}
        clock.start(on: scheduler) {}
        #expect(scheduler.count == 0)
    }
}
