import CourierHTTP
import Testing

@Suite("TaskLifecycle state machine")
struct TaskLifecycleTests {
    @Test func newTaskIsSuspendedAndFirstResumeStarts() {
        var machine = TaskLifecycle()
        #expect(machine.state == .suspended)
        #expect(machine.resume() == .start)
        #expect(machine.state == .running)
        #expect(machine.resume() == .none)
    }

    @Test func suspendAndResumePauseAndProceed() {
        var machine = TaskLifecycle()
        _ = machine.resume()
        #expect(machine.suspend() == .pause)
        #expect(machine.state == .suspended)
        #expect(machine.resume() == .proceed)
        #expect(machine.state == .running)
    }

    /// Darwin's header: "-suspend and -resume are nestable". Only the resume that undoes the last suspend acts.
    @Test func suspendsNestAndTakeAsManyResumes() {
        var machine = TaskLifecycle()
        _ = machine.resume()
        #expect(machine.suspend() == .pause)
        #expect(machine.suspend() == .none)
        #expect(machine.suspend() == .none)
        #expect(machine.resume() == .none)
        #expect(machine.resume() == .none)
        #expect(machine.state == .suspended)
        #expect(machine.resume() == .proceed)
        #expect(machine.state == .running)
        #expect(machine.resume() == .none)
        #expect(machine.suspend() == .pause)
    }

    /// A new task counts as suspended once: a `suspend()` before the first `resume()` takes one more to start.
    @Test func aSuspendBeforeTheFirstResumeTakesAnotherResumeToStart() {
        var machine = TaskLifecycle()
        #expect(machine.suspend() == .none)
        #expect(machine.resume() == .none)
        #expect(machine.state == .suspended)
        #expect(!machine.isOutstanding)
        #expect(machine.resume() == .start)
        #expect(machine.isOutstanding)
    }

    @Test func cancelWhileSuspendedTwiceCancelsTheTransfer() {
        var machine = TaskLifecycle()
        _ = machine.resume()
        _ = machine.suspend()
        _ = machine.suspend()
        #expect(machine.cancel() == .cancelTransfer)
        #expect(machine.resume() == .none)
        #expect(machine.state == .canceling)
    }

    @Test func cancelBeforeStartCompletesWithoutTransfer() {
        var machine = TaskLifecycle()
        #expect(machine.cancel() == .completeWithoutTransfer)
        #expect(machine.state == .canceling)
        #expect(machine.resume() == .none)
        #expect(machine.complete() == .deliverCompletion)
        #expect(machine.state == .completed)
    }

    @Test(arguments: [true, false])
    func cancelAfterStartCancelsTheTransfer(suspendFirst: Bool) {
        var machine = TaskLifecycle()
        _ = machine.resume()
        if suspendFirst { _ = machine.suspend() }
        #expect(machine.cancel() == .cancelTransfer)
        #expect(machine.cancel() == .none)
        #expect(machine.suspend() == .none)
    }

    @Test func completionIsDeliveredExactlyOnce() {
        var machine = TaskLifecycle()
        _ = machine.resume()
        #expect(machine.complete() == .deliverCompletion)
        #expect(machine.complete() == .none)
        #expect(machine.cancel() == .none)
        #expect(machine.resume() == .none)
        #expect(machine.state == .completed)
    }

    /// Which events leave a task listed by its session (Darwin: from the first resume until cancel or completion).
    @Test(
        arguments: [
            ([String](), false), (["resume"], true), (["resume", "suspend"], true), (["suspend"], false),
            (["cancel"], false), (["cancel", "resume"], false), (["resume", "cancel"], false),
            (["resume", "complete"], false), (["resume", "suspend", "resume"], true),
            (["suspend", "resume"], false), (["suspend", "resume", "resume"], true),
        ])
    func outstanding(events: [String], listed: Bool) {
        var machine = TaskLifecycle()
        for event in events {
            switch event {
            case "resume": _ = machine.resume()
            case "suspend": _ = machine.suspend()
            case "cancel": _ = machine.cancel()
            default: _ = machine.complete()
            }
        }
        #expect(machine.isOutstanding == listed)
    }
}
