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
}
