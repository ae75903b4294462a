import Dispatch
import Foundation
import Synchronization

/// Makes a task follow whether a `Progress` bound to it is paused, holding at most one of the task's suspensions.
///
/// `suspend()` and `resume()` nest, but `Progress` is no counter: Foundation's `pause()` calls the pausing handler
/// on every call, also when the progress is paused already, and runs the handlers asynchronously on a concurrent
/// queue, so a `pause()` and a `resume()` in quick succession can reach the task in either order. Acting on each
/// call would leave a task suspended twice after two `pause()` calls and one `resume()`, or suspended while its
/// progress says it is not. Instead, every handler call schedules one look at `isPaused`, on one serial queue, and
/// the follower suspends or resumes only when that differs from what it holds: the last look sees the last call.
package final class ProgressPauseFollower: Sendable {
    /// Where the looks run, one at a time. Never an event loop, and no lock is held: suspending or resuming may
    /// start a task, whose request stages (a custom `URLProtocol`'s `canInit`) are the app's code.
    private static let queue = DispatchQueue(label: "courier.progress-pause")

    private let holdsSuspension = Mutex(false)
    private let pause: @Sendable () -> Void
    private let resume: @Sendable () -> Void

    /// - Parameters:
    ///   - pause: Suspends the task (called when the progress became paused).
    ///   - resume: Resumes the task (called when it is no longer paused).
    package init(pause: @escaping @Sendable () -> Void, resume: @escaping @Sendable () -> Void) {
        self.pause = pause
        self.resume = resume
    }

    /// Installs the pausing and resuming handlers of `progress`. They hold the follower (the progress keeps it alive,
    /// and the follower's actions hold the task weakly) and the progress weakly.
    package func follow(_ progress: Progress) {
        progress.isPausable = true
        let handler: @Sendable () -> Void = { [self, weak progress] in
            guard let progress else { return }
            Self.queue.async { self.look(at: progress) }
        }
        progress.pausingHandler = handler
        progress.resumingHandler = handler
    }

    private func look(at progress: Progress) {
        let paused = progress.isPaused
        let changed = holdsSuspension.withLock { holds in
            guard holds != paused else { return false }
            holds = paused
            return true
        }
        guard changed else { return }
        if paused { pause() } else { resume() }
    }
}
