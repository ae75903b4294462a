import CourierMockServer
import CourierTestSupport
import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import Courier

@Suite("DelegateDispatcher")
struct DelegateDispatcherTests {
    @Test func jobsRunInOrderOneAtATimeEvenOnAConcurrentQueue() async {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 8
        let dispatcher = DelegateDispatcher(queue: queue)
        let log = NIOLockedValueBox<(order: [Int], running: Int, maxRunning: Int, offQueue: Int)>(([], 0, 0, 0))
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            for index in 0..<500 {
                dispatcher.async {
                    log.withLockedValue { state in
                        state.running += 1
                        state.maxRunning = max(state.maxRunning, state.running)
                        if OperationQueue.current !== queue { state.offQueue += 1 }
                    }
                    log.withLockedValue { state in
                        state.order.append(index)
                        state.running -= 1
                    }
                    if index == 499 { done.resume() }
                }
            }
        }
        let state = log.withLockedValue { $0 }
        #expect(state.order == Array(0..<500))
        #expect(state.maxRunning == 1)
        #expect(state.offQueue == 0)
    }

    /// An app that puts work on the delegate queue (or on its `underlyingQueue`, as Alamofire does) and then does
    /// what submits a job (cancels a task) sees its work first, as on Darwin. Before, the operation already on the
    /// queue for an earlier job ran every job there was when it ran, so the later job went ahead of the app's work
    /// (Alamofire's mass cancel saw a task's completion before its own "explicitly cancelled" mark).
    @Test(arguments: [true, false])
    func aJobNeverRunsAheadOfWorkQueuedBeforeItWasSubmitted(throughUnderlyingQueue: Bool) async {
        let underlying = DispatchQueue(label: "underlying")
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.underlyingQueue = underlying
        let dispatcher = DelegateDispatcher(queue: queue)
        let order = NIOLockedValueBox<[String]>([])
        // Alamofire's `cancelAllRequests` runs as a block of the underlying queue's and queues its marks there;
        // other apps use operations.
        @Sendable func onQueue(_ work: @escaping @Sendable () -> Void) {
            if throughUnderlyingQueue { underlying.async(execute: work) } else { queue.addOperation(work) }
        }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            onQueue {
                dispatcher.async { order.withLockedValue { $0.append("first job") } }
                onQueue { order.withLockedValue { $0.append("app's work") } }
                dispatcher.async {
                    order.withLockedValue { $0.append("second job") }
                    done.resume()
                }
            }
        }
        #expect(order.withLockedValue { $0 } == ["first job", "app's work", "second job"])
    }

    /// Work the app adds to the delegate queue after a job was submitted runs after the job, as on Darwin (the app
    /// "flushes" the queue with an empty operation). Before, a job submitted while another ran waited for an
    /// operation added only when that one ended, behind the app's work.
    @Test(arguments: [true, false])
    func aJobRunsBeforeWorkQueuedAfterItWasSubmitted(onAGivenQueue: Bool) async {
        let given = OperationQueue()
        given.maxConcurrentOperationCount = 1
        let dispatcher = DelegateDispatcher(queue: onAGivenQueue ? given : nil)
        let queue = dispatcher.queue
        let order = NIOLockedValueBox<[String]>([])
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            dispatcher.async {
                order.withLockedValue { $0.append("first job") }
                dispatcher.async { order.withLockedValue { $0.append("second job") } }
                queue.addOperation {
                    order.withLockedValue { $0.append("app's work") }
                    done.resume()
                }
            }
        }
        // The second job, if it comes after the app's work, is given time to show it.
        for _ in 0..<100 where order.withLockedValue({ $0.count }) < 3 { try? await Task.sleep(for: .milliseconds(10)) }
        #expect(order.withLockedValue { $0 } == ["first job", "second job", "app's work"])
    }

    /// An app that cancels its delegate queue's operations loses no job. Before, the cancelled operation that was to
    /// drain the jobs never ran, and every later job of the session waited for it forever.
    @Test(arguments: [1, 4])
    func cancellingTheQueuesOperationsLosesNoJob(maxConcurrentOperations: Int) async throws {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = maxConcurrentOperations
        let dispatcher = DelegateDispatcher(queue: queue)
        let ran = NIOLockedValueBox<[String]>([])
        queue.isSuspended = true
        dispatcher.async { ran.withLockedValue { $0.append("before") } }
        queue.cancelAllOperations()
        queue.isSuspended = false
        dispatcher.async { ran.withLockedValue { $0.append("after") } }
        // Bounded: before, nothing ever ran.
        for _ in 0..<500 where ran.withLockedValue({ $0.count }) < 2 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(ran.withLockedValue { $0 } == ["before", "after"])
    }

    /// A session without a delegate, used through its async methods and invalidated, never needed a delegate
    /// queue and never made one (before, every session made its `OperationQueue` when created, and invalidation
    /// queued a job on it for a delegate that did not exist).
    @Test func aSessionWithoutDelegateMakesItsQueueOnlyWhenAsked() async throws {
        try await withServer { server in
            server.route("/a", response: .ok("body"))
            let session = makeSession()
            let (data, _) = try await session.data(from: server.url("/a"))
            #expect(data == Data("body".utf8))
            // The task leaves the session's registry just after its data is returned: wait for that (bounded),
            // so that the invalidation below finds the session empty and becomes invalid at once.
            for _ in 0..<2000 where !session.registry.allTasks().isEmpty { await Task.yield() }
            #expect(session.registry.allTasks().isEmpty)
            #expect(!session.dispatcher.hasQueue)
            session.finishTasksAndInvalidate()
            #expect(!session.dispatcher.hasQueue)
            let queue = session.delegateQueue
            #expect(session.dispatcher.hasQueue)
            #expect(session.delegateQueue === queue)
            #expect(queue.maxConcurrentOperationCount == 1)
        }
    }

    /// Completion handlers still run on the queue made at first use, and it is the one `delegateQueue` returns.
    @Test func completionHandlersRunOnTheQueueMadeForThem() async throws {
        try await withServer { server in
            server.route("/a", response: .ok("body"))
            let session = makeSession()
            defer { session.finishTasksAndInvalidate() }
            #expect(!session.dispatcher.hasQueue)
            let onQueue: Bool = await withCheckedContinuation { continuation in
                session.dataTask(with: server.url("/a")) { _, _, _ in
                    continuation.resume(returning: OperationQueue.current === session.delegateQueue)
                }.resume()
            }
            #expect(onQueue)
        }
    }

    /// The queue a user gives is the session's from the start.
    @Test func aGivenQueueIsUsedAsIs() {
        let queue = OperationQueue()
        let session = makeSession(queue: queue)
        defer { session.finishTasksAndInvalidate() }
        #expect(session.dispatcher.hasQueue)
        #expect(session.delegateQueue === queue)
    }
}
