import Foundation
import NIOConcurrencyHelpers

/// A thread of its own with a running `RunLoop`, for one custom `URLProtocol` instance: Darwin calls `startLoading`
/// on such a thread, and protocol authors rely on it for timers, streams and `perform(_:)`.
///
/// Work is handed over as a timer that fires at once (adding a timer wakes the run loop from any thread); the loop
/// runs until ``stop()``. The thread starts with the first work handed over: a load that never starts (its task was
/// cancelled while the protocol lookup asked `canInit`) costs no thread, and so leaves none behind.
final class ProtocolThread: @unchecked Sendable {  // RunLoop is not Sendable; it is only added timers to

    private struct State {
        var runLoop: RunLoop?
        /// Work handed over before the thread's run loop existed.
        var pending: [@Sendable () -> Void] = []
        var stopped = false
        /// Whether the thread was started (at the first ``perform(_:)``).
        var started = false
    }

    private let state = NIOLockedValueBox(State())

    init() {}

    /// Starts the thread; nobody waits for it: work handed over meanwhile runs when it is up.
    private func startThread() {
        let thread = Thread { [self] in
            // Named from inside: on Linux a name set before `start()` never reaches the thread (pthread names
            // hold 15 characters). Best effort: when the thread runs before Foundation recorded its pthread, the
            // kernel keeps the name inherited from the creating thread.
            Thread.current.name = "courier.proto"
            let runLoop = RunLoop.current
            // A source that never fires keeps the run loop from returning at once for want of sources.
            let keepAlive = Timer(timeInterval: 86_400, repeats: true) { _ in }
            runLoop.add(keepAlive, forMode: .default)
            // Work handed over before the run loop existed runs from the loop too (protocols expect their
            // run loop to be running in startLoading), in order, before anything handed over later.
            state.withLockedValue { state in
                state.runLoop = runLoop
                let pending = state.pending
                state.pending = []
                guard !pending.isEmpty else { return }
                runLoop.add(
                    Timer(fire: Date(), interval: 0, repeats: false) { _ in for work in pending { work() } },
                    forMode: .default)
            }
            while !state.withLockedValue({ $0.stopped }) {
                _ = runLoop.run(mode: .default, before: .distantFuture)
            }
            keepAlive.invalidate()
        }
        thread.start()
    }

    /// Runs `work` on the thread, after the work handed over before it; the first call starts the thread.
    func perform(_ work: @escaping @Sendable () -> Void) {
        let (runLoop, starts) = state.withLockedValue { state -> (RunLoop?, Bool) in
            guard !state.stopped else { return (nil, false) }
            if state.runLoop == nil { state.pending.append(work) }
            let starts = !state.started
            state.started = true
            return (state.runLoop, starts)
        }
        if starts { startThread() }
        guard let runLoop else { return }
        let timer = Timer(fire: Date(), interval: 0, repeats: false) { _ in work() }
        runLoop.add(timer, forMode: .default)
    }

    /// Ends the thread once the work handed over so far has run; a thread never started is not started.
    func stop() {
        let started = state.withLockedValue { state -> Bool in
            if !state.started { state.stopped = true }
            return state.started
        }
        guard started else { return }
        perform { [self] in
            state.withLockedValue { $0.stopped = true }
            // A fired timer does not make `run(mode:before:)` return (only a handled source does), so the loop
            // would wait until its distant limit date and every load would leave its thread behind. Stopping the
            // run loop ends the current run; the loop above then sees `stopped`.
            RunLoop.current.stopCurrentRun()
        }
    }
}

extension RunLoop {
    /// Makes the run loop's current `run(mode:before:)` return, as `CFRunLoopStop` does.
    fileprivate func stopCurrentRun() {
        #if canImport(Darwin)
            CFRunLoopStop(getCFRunLoop())
        #else
            _stop()  // swift-corelibs-foundation's `CFRunLoopStop`
        #endif
    }
}
