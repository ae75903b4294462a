import NIOCore
import NIOEmbedded
import NIOHTTP2
import Testing

@testable import CourierTransport

/// The flush coalescer on an embedded channel: flushes asked for in one turn of the loop reach the connection as
/// one, after the jobs already queued; closing or removing it flushes what it held back.
@Suite("HTTP2FlushCoalescer")
struct HTTP2FlushCoalescerTests {
    /// Counts the flushes that get past the coalescer, on the connection's side of it.
    final class FlushCounter: ChannelOutboundHandler {
        typealias OutboundIn = HTTP2Frame
        var flushes = 0

        func flush(context: ChannelHandlerContext) {
            flushes += 1
            context.flush()
        }
    }

    /// An embedded channel whose pipeline is the counter, then the coalescer.
    final class Harness {
        let loop = EmbeddedEventLoop()
        let channel: EmbeddedChannel
        let counter = FlushCounter()
        let coalescer = HTTP2FlushCoalescer()

        init() throws {
            channel = EmbeddedChannel(loop: loop)
            try channel.pipeline.syncOperations.addHandler(counter)
            try channel.pipeline.syncOperations.addHandler(coalescer)
            try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).wait()
        }

        /// Writes and flushes a PING carrying `value`, as a stream flushing its request would.
        func writeAndFlush(_ value: UInt64) {
            channel.pipeline.writeAndFlush(
                HTTP2Frame(streamID: .rootStream, payload: .ping(HTTP2PingData(withInteger: value), ack: false)),
                promise: nil)
        }

        /// The values of the PINGs that reached the connection, in order.
        func sent() throws -> [UInt64] {
            var values: [UInt64] = []
            while let frame = try channel.readOutbound(as: HTTP2Frame.self) {
                if case .ping(let data, ack: false) = frame.payload { values.append(data.integer) }
            }
            return values
        }
    }

    @Test func flushesInOneTurnReachTheConnectionAsOneAfterTheQueuedJobs() throws {
        let harness = try Harness()
        // A job queued before the flushes were asked for (another stream's start, say) runs before the held-back
        // flush, and what it writes leaves with the rest.
        var sentWhenTheJobRan: [UInt64]?
        harness.loop.execute {
            sentWhenTheJobRan = try? harness.sent()
            harness.writeAndFlush(4)
        }
        harness.writeAndFlush(1)
        harness.writeAndFlush(2)
        harness.writeAndFlush(3)
        #expect(harness.counter.flushes == 0)
        #expect(try harness.sent() == [])

        harness.loop.run()
        #expect(sentWhenTheJobRan == [])
        #expect(harness.counter.flushes == 1)
        #expect(try harness.sent() == [1, 2, 3, 4])
    }

    @Test func aFlushAfterTheHeldBackOneRanIsHeldBackAgain() throws {
        let harness = try Harness()
        harness.writeAndFlush(1)
        harness.loop.run()
        harness.writeAndFlush(2)
        #expect(harness.counter.flushes == 1)
        #expect(try harness.sent() == [1])

        harness.loop.run()
        #expect(harness.counter.flushes == 2)
        #expect(try harness.sent() == [2])
    }

    @Test func closingFlushesWhatWasHeldBackFirst() throws {
        let harness = try Harness()
        harness.writeAndFlush(7)
        _ = try harness.channel.close().wait()
        #expect(harness.counter.flushes == 1)
        #expect(try harness.sent() == [7])

        // The job queued for the held-back flush finds nothing left to do.
        harness.loop.run()
        #expect(harness.counter.flushes == 1)
    }

    @Test func removingTheHandlerFlushesWhatWasHeldBack() throws {
        let harness = try Harness()
        harness.writeAndFlush(9)
        try harness.channel.pipeline.syncOperations.removeHandler(harness.coalescer).wait()
        #expect(harness.counter.flushes == 1)
        #expect(try harness.sent() == [9])
        harness.loop.run()
        #expect(harness.counter.flushes == 1)
        _ = try harness.channel.finish()
    }
}
