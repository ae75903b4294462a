import CourierHTTP
import NIOCore
import NIOEmbedded
import Testing

@testable import CourierTransport

/// A request waiting in the pool's queue holds a deadline in the shared scheduler; every way out of the wait must
/// remove it, or it would keep the exchange alive until it fired and could end a later wait early.
@Suite("TransportExchange: the wait's deadline")
struct TransportExchangeWaitTests {
    private func waitingExchange(_ deadlines: DeadlineScheduler, loop: EmbeddedEventLoop) throws -> TransportExchange {
        let exchange = TransportExchange(
            request: try HTTP1TestPipeline.request(idleTimeout: .seconds(10)), consumer: RecordingConsumer(),
            pool: HTTP1TestPipeline.makePool(group: loop, deadlines: deadlines))
        exchange.markWaiting()
        #expect(deadlines.count == 1)
        return exchange
    }

    @Test func aWaiterThePoolFailsLeavesNoDeadline() throws {
        let loop = EmbeddedEventLoop()
        let deadlines = DeadlineScheduler(loop: loop)
        let exchange = try waitingExchange(deadlines, loop: loop)
        exchange.connectionFailed(.cannotConnectToHost("refused"), retryable: false)
        #expect(deadlines.count == 0)
    }

    @Test func aCancelledWaiterLeavesNoDeadline() throws {
        let loop = EmbeddedEventLoop()
        let deadlines = DeadlineScheduler(loop: loop)
        let exchange = try waitingExchange(deadlines, loop: loop)
        exchange.cancel(.cancelled("cancelled"))
        #expect(deadlines.count == 0)
    }

    @Test func aWaiterThatTimesOutFailsWithTimedOut() throws {
        let loop = EmbeddedEventLoop()
        let deadlines = DeadlineScheduler(loop: loop)
        let consumer = RecordingConsumer()
        let exchange = TransportExchange(
            request: try HTTP1TestPipeline.request(idleTimeout: .seconds(10)), consumer: consumer,
            pool: HTTP1TestPipeline.makePool(group: loop, deadlines: deadlines))
        exchange.markWaiting()
        loop.advanceTime(by: .seconds(11))
        #expect(deadlines.count == 0)
        #expect(consumer.events.contains { if case .failed = $0 { return true } else { return false } })
    }
}
