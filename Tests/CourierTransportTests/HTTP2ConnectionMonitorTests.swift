import NIOCore
import NIOEmbedded
import NIOHTTP2
import Testing

@testable import CourierTransport

/// The HTTP/2 connection monitor fed frames and stream events on an embedded loop: readiness on the first SETTINGS,
/// stream-limit changes, GOAWAY, and the idle connection's PING liveness and idle timeout on a virtual clock.
@Suite("HTTP2ConnectionMonitor")
struct HTTP2ConnectionMonitorTests {
    /// A monitor on an embedded channel with recorded callbacks.
    final class Harness {
        let loop = EmbeddedEventLoop()
        let channel: EmbeddedChannel
        let monitor: HTTP2ConnectionMonitor
        let ready: EventLoopPromise<Int>
        var capacities: [Int] = []
        var goAways: [Int] = []
        var closedCount = 0

        init(timing: HTTP2ConnectionMonitor.Timing = .init(idleTimeout: .seconds(60))) throws {
            channel = EmbeddedChannel(loop: loop)
            ready = loop.makePromise()
            monitor = HTTP2ConnectionMonitor(ready: ready, timing: timing)
            try channel.pipeline.syncOperations.addHandler(monitor)
            try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).wait()
            monitor.onCapacityChanged = { [weak self] in self?.capacities.append($0) }
            monitor.onGoAway = { [weak self] in self?.goAways.append($0) }
            monitor.onClosed = { [weak self] in self?.closedCount += 1 }
        }

        func receive(_ payload: HTTP2Frame.FramePayload, stream: HTTP2StreamID = .rootStream) throws {
            try channel.writeInbound(HTTP2Frame(streamID: stream, payload: payload))
            _ = try channel.readInbound(as: HTTP2Frame.self)
        }

        func settings(_ values: [(HTTP2SettingsParameter, Int)]) throws {
            try receive(.settings(.settings(values.map { HTTP2Setting(parameter: $0.0, value: $0.1) })))
        }

        func streamOpened(_ id: Int) {
            channel.pipeline.fireUserInboundEventTriggered(
                NIOHTTP2StreamCreatedEvent(
                    streamID: HTTP2StreamID(id), localInitialWindowSize: 65535, remoteInitialWindowSize: 65535))
        }

        func streamClosed(_ id: Int) {
            channel.pipeline.fireUserInboundEventTriggered(StreamClosedEvent(streamID: HTTP2StreamID(id), reason: nil))
        }

        /// The PING frames written since the last call.
        func writtenPings() throws -> [HTTP2PingData] {
            var pings: [HTTP2PingData] = []
            while let frame = try channel.readOutbound(as: HTTP2Frame.self) {
                if case .ping(let data, ack: false) = frame.payload { pings.append(data) }
            }
            return pings
        }

        var readyValue: Int? {
            var value: Int?
            ready.futureResult.assumeIsolated().whenSuccess { value = $0 }
            return value
        }

        deinit {
            _ = try? channel.finish(acceptAlreadyClosed: true)
        }
    }

    @Test func readyWithTheServersStreamLimitOnItsFirstSettings() throws {
        let harness = try Harness()
        #expect(harness.readyValue == nil)
        try harness.settings([(.maxConcurrentStreams, 7), (.initialWindowSize, 1000)])
        #expect(harness.readyValue == 7)
        try harness.settings([(.maxConcurrentStreams, 3)])
        try harness.settings([(.initialWindowSize, 5)])
        #expect(harness.capacities == [3])
    }

    @Test func aSettingsFrameWithoutAStreamLimitMeansTheDefault() throws {
        let harness = try Harness()
        try harness.settings([(.initialWindowSize, 1000)])
        #expect(harness.readyValue == HTTP2ConnectionMonitor.defaultMaximumConcurrentStreams)
    }

    @Test func aConnectionThatClosesBeforeItsSettingsFailsReadiness() throws {
        let harness = try Harness()
        var failed = false
        harness.ready.futureResult.assumeIsolated().whenFailure { _ in failed = true }
        harness.channel.pipeline.fireChannelInactive()
        #expect(failed)
        #expect(harness.closedCount == 1)
    }

    @Test func anIdleConnectionIsPingedAndStaysOpenWhileThePeerAnswers() throws {
        let harness = try Harness(timing: .init(idleTimeout: .seconds(60), pingInterval: .seconds(5)))
        try harness.settings([(.maxConcurrentStreams, 10)])
        harness.loop.advanceTime(by: .seconds(4))
        #expect(try harness.writtenPings().isEmpty)
        harness.loop.advanceTime(by: .seconds(1))
        let pings = try harness.writtenPings()
        #expect(pings.count == 1)
        try harness.receive(.ping(try #require(pings.first), ack: true))
        harness.loop.advanceTime(by: .seconds(5))
        #expect(harness.channel.isActive)
        #expect(try harness.writtenPings().count == 1)
    }

    @Test func anUnansweredPingClosesTheConnection() throws {
        let harness = try Harness(
            timing: .init(idleTimeout: .seconds(60), pingInterval: .seconds(5), pingTimeout: .seconds(2)))
        try harness.settings([(.maxConcurrentStreams, 10)])
        harness.loop.advanceTime(by: .seconds(5))
        #expect(try harness.writtenPings().count == 1)
        harness.loop.advanceTime(by: .seconds(1))
        #expect(harness.channel.isActive)
        harness.loop.advanceTime(by: .seconds(1))
        #expect(!harness.channel.isActive)
    }

    @Test func aBusyConnectionIsNeitherPingedNorClosedForIdleness() throws {
        let harness = try Harness(timing: .init(idleTimeout: .seconds(10), pingInterval: .seconds(5)))
        try harness.settings([(.maxConcurrentStreams, 10)])
        harness.streamOpened(1)
        harness.loop.advanceTime(by: .seconds(30))
        #expect(try harness.writtenPings().isEmpty)
        #expect(harness.channel.isActive)
        harness.streamClosed(1)
        harness.loop.advanceTime(by: .seconds(9))
        #expect(harness.channel.isActive)
        harness.loop.advanceTime(by: .seconds(1))
        #expect(!harness.channel.isActive)
    }

    @Test func goAwayIsReportedOnceAndTheConnectionClosesWithItsLastStream() throws {
        let harness = try Harness()
        try harness.settings([(.maxConcurrentStreams, 10)])
        harness.streamOpened(1)
        harness.streamOpened(3)
        try harness.receive(.goAway(lastStreamID: 1, errorCode: .noError, opaqueData: nil))
        try harness.receive(.goAway(lastStreamID: 1, errorCode: .noError, opaqueData: nil))
        #expect(harness.goAways == [1])
        harness.streamClosed(3)
        #expect(harness.channel.isActive)
        harness.streamClosed(1)
        #expect(!harness.channel.isActive)
    }

    struct SomeProtocolError: Error {}

    @Test func aStreamErrorLeavesTheConnectionOpen() throws {
        let harness = try Harness()
        try harness.settings([(.maxConcurrentStreams, 10)])
        harness.streamOpened(1)
        harness.streamOpened(3)
        // NIOHTTP2 reports the error, then the stream it reset closes with the reset's code.
        harness.channel.pipeline.fireErrorCaught(SomeProtocolError())
        harness.channel.pipeline.fireUserInboundEventTriggered(
            StreamClosedEvent(streamID: 1, reason: .protocolError))
        harness.loop.run()
        #expect(harness.channel.isActive)
    }

    @Test func aStreamErrorReportedAfterItsResetLeavesTheConnectionOpen() throws {
        let harness = try Harness()
        try harness.settings([(.maxConcurrentStreams, 10)])
        harness.streamOpened(1)
        // NIOHTTP2 may deliver the reset first and the error after it, in the same loop turn.
        harness.channel.pipeline.fireUserInboundEventTriggered(
            StreamClosedEvent(streamID: 1, reason: .protocolError))
        harness.channel.pipeline.fireErrorCaught(SomeProtocolError())
        harness.loop.run()
        #expect(harness.channel.isActive)
        // A later error with no reset around it is the connection's.
        harness.channel.pipeline.fireErrorCaught(SomeProtocolError())
        harness.loop.run()
        #expect(!harness.channel.isActive)
    }

    @Test func aConnectionErrorTakesTheConnectionOutOfThePoolThenClosesIt() throws {
        let harness = try Harness()
        var unusable = 0
        harness.monitor.onUnusable = { unusable += 1 }
        try harness.settings([(.maxConcurrentStreams, 10)])
        harness.channel.pipeline.fireErrorCaught(SomeProtocolError())
        harness.loop.run()
        #expect(unusable == 1)
        #expect(!harness.channel.isActive)
    }

    @Test func aConnectionErrorClosesTheConnection() throws {
        let harness = try Harness()
        try harness.settings([(.maxConcurrentStreams, 10)])
        harness.streamOpened(1)
        harness.channel.pipeline.fireErrorCaught(SomeProtocolError())
        // Streams a GOAWAY drops close with CANCEL: not the trace of a stream error.
        harness.channel.pipeline.fireUserInboundEventTriggered(StreamClosedEvent(streamID: 1, reason: .cancel))
        harness.loop.run()
        #expect(!harness.channel.isActive)
        #expect(harness.closedCount == 1)
    }

    @Test func anErrorBeforeTheFirstSettingsClosesAtOnceAndFailsReadiness() throws {
        let harness = try Harness()
        var failed = false
        harness.ready.futureResult.assumeIsolated().whenFailure { _ in failed = true }
        harness.channel.pipeline.fireErrorCaught(SomeProtocolError())
        #expect(failed)
        #expect(!harness.channel.isActive)
    }
}
