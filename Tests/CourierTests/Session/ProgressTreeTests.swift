import Dispatch
import Foundation
import Testing

@testable import Courier

/// The usual way to show the overall progress of several transfers — each task's `progress` a child of one
/// `Progress` — must hold when the tasks' engines report from several threads at once, as Darwin's thread-safe
/// `NSProgress` does. swift-corelibs-foundation's `Progress` has no lock, and a write to a child also changes its
/// parent, so Courier serialises its writes.
@Suite("Progress trees")
struct ProgressTreeTests {
    @Test func tasksReportingFromManyThreadsCompleteTheirSharedParent() {
        let count = 2_000
        let parent = Progress.discreteProgress(totalUnitCount: Int64(count))
        let tasks = (0..<count).map { _ in URLSessionTask() }
        for task in tasks { parent.addChild(task.progress, withPendingUnitCount: 1) }
        // What the engines of tasks that end at the same time do, each on its own thread.
        DispatchQueue.concurrentPerform(iterations: count) { index in
            tasks[index].setProgress(total: 1_000, completed: 1_000)
        }
        #expect(parent.completedUnitCount == Int64(count))
        #expect(tasks.allSatisfy { $0.progress.completedUnitCount == 1_000 })
    }
}
