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

        /// What NIOHTTP2 does for a connection error: it writes GOAWAY (telling its frame delegate), then reports the
        /// error.
        func connectionError() {
            let goAway = HTTP2Frame.FramePayload.goAway(
                lastStreamID: .maxID, errorCode: .protocolError, opaqueData: nil)
            monitor.wroteFrame(HTTP2Frame(streamID: .rootStream, payload: goAway))
            channel.pipeline.fireErrorCaught(NIOHTTP2Errors.noSuchStream(streamID: 7))
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

    @Test func aGoAwayIsKeptForAConnectionNotBoundYetAndOnlyLowered() throws {
        let harness = try Harness()
        harness.monitor.onGoAway = nil  // as before the pool binds the connection
        try harness.settings([(.maxConcurrentStreams, 10)])
        harness.streamOpened(1)
        try harness.receive(.goAway(lastStreamID: .maxID, errorCode: .noError, opaqueData: nil))
        #expect(harness.monitor.goAwayLastStreamID == Int(HTTP2StreamID.maxID))
        try harness.receive(.goAway(lastStreamID: 1, errorCode: .noError, opaqueData: nil))
        #expect(harness.monitor.goAwayLastStreamID == 1)
        #expect(harness.goAways.isEmpty)
        #expect(harness.channel.isActive)
    }

    struct SomeProtocolError: Error {}

    @Test func aStreamErrorLeavesTheConnectionOpen() throws {
        let harness = try Harness()
        try harness.settings([(.maxConcurrentStreams, 10)])
        harness.streamOpened(1)
        harness.streamOpened(3)
        // NIOHTTP2 resets the stream (its close comes first while the connection can write), then reports the error.
        harness.channel.pipeline.fireUserInboundEventTriggered(
            StreamClosedEvent(streamID: 1, reason: .protocolError))
        harness.channel.pipeline.fireErrorCaught(NIOHTTP2Errors.contentLengthViolated())
        harness.loop.run()
        #expect(harness.channel.isActive)
    }

    @Test func aStreamErrorWhoseResetIsHeldBackLeavesTheConnectionOpen() throws {
        let harness = try Harness()
        try harness.settings([(.maxConcurrentStreams, 10)])
        harness.streamOpened(1)
        // While the connection cannot write, NIOHTTP2 buffers the RST_STREAM: the error comes turns before the close.
        harness.channel.pipeline.fireErrorCaught(NIOHTTP2Errors.contentLengthViolated())
        harness.loop.run()
        harness.loop.advanceTime(by: .seconds(1))
        #expect(harness.channel.isActive)
        harness.channel.pipeline.fireUserInboundEventTriggered(
            StreamClosedEvent(streamID: 1, reason: .protocolError))
        harness.loop.run()
        #expect(harness.channel.isActive)
    }

    /// Passes errors on, as the stream multiplexer behind the monitor would get them.
    final class ErrorWitness: ChannelInboundHandler {
        typealias InboundIn = HTTP2Frame
        var errors: [any Error] = []

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            errors.append(error)
        }
    }

    @Test func anErrorSendingOnAStreamGoesToThatStreamNotTheConnection() throws {
        let harness = try Harness()
        let witness = ErrorWitness()
        try harness.channel.pipeline.syncOperations.addHandler(witness)
        try harness.settings([(.maxConcurrentStreams, 10)])
        harness.streamOpened(1)
        harness.channel.pipeline.fireErrorCaught(
            NIOHTTP2Errors.streamError(streamID: 1, baseError: NIOHTTP2Errors.contentLengthViolated()))
        harness.loop.run()
        #expect(harness.channel.isActive)
        #expect((witness.errors.first as? NIOHTTP2Errors.StreamError)?.streamID == 1)
    }

    @Test func aConnectionErrorInTheTurnOfAServersResetClosesTheConnection() throws {
        let harness = try Harness()
        try harness.settings([(.maxConcurrentStreams, 10)])
        harness.streamOpened(1)
        harness.streamOpened(3)
        // The server resets stream 1, and a frame later in the same read is a connection error.
        try harness.receive(.rstStream(.internalError), stream: 1)
        harness.channel.pipeline.fireUserInboundEventTriggered(
            StreamClosedEvent(streamID: 1, reason: .internalError))
        harness.connectionError()
        #expect(!harness.channel.isActive)
    }

    /// Notes, as each stream's close passes it, which stream the monitor names as reset by NIOHTTP2 for the server's
    /// error: where the stream's handler asks.
    final class ResetWitness: ChannelInboundHandler {
        typealias InboundIn = HTTP2Frame
        let monitor: HTTP2ConnectionMonitor
        var seen: [HTTP2StreamID?] = []

        init(monitor: HTTP2ConnectionMonitor) {
            self.monitor = monitor
        }

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if event is StreamClosedEvent { seen.append(monitor.streamResetForServerError) }
            context.fireUserInboundEventTriggered(event)
        }
    }

    @Test func aResetNIOHTTP2SentIsTheServersErrorAResetTheServerSentIsNot() throws {
        let harness = try Harness()
        let witness = ResetWitness(monitor: harness.monitor)
        try harness.channel.pipeline.syncOperations.addHandler(witness)
        try harness.settings([(.maxConcurrentStreams, 10)])
        harness.streamOpened(1)
        harness.streamOpened(3)
        harness.streamOpened(5)
        // No RST_STREAM came for stream 1: NIOHTTP2 reset it, for a malformed response.
        harness.channel.pipeline.fireUserInboundEventTriggered(StreamClosedEvent(streamID: 1, reason: .protocolError))
        // The server reset stream 3 itself: its frame passes first, then the close.
        try harness.receive(.rstStream(.protocolError), stream: 3)
        harness.channel.pipeline.fireUserInboundEventTriggered(StreamClosedEvent(streamID: 3, reason: .protocolError))
        harness.streamClosed(5)
        #expect(witness.seen == [HTTP2StreamID(1), nil, nil])
        #expect(harness.monitor.streamResetForServerError == nil)
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

    /// Every close the monitor decides takes the connection out of the pool before the close begins: a TLS close
    /// leaves the channel active a while, and a request the pool leased meanwhile would meet a closing connection.
    @Test func anIdleCloseTakesTheConnectionOutOfThePoolThenClosesIt() throws {
        // No ping: it would come after the idle timeout.
        let harness = try Harness(timing: .init(idleTimeout: .seconds(10), pingInterval: .seconds(30)))
        var activeWhenUnusable: [Bool] = []
        let channel = harness.channel
        harness.monitor.onUnusable = { activeWhenUnusable.append(channel.isActive) }
        try harness.settings([(.maxConcurrentStreams, 10)])
        harness.loop.advanceTime(by: .seconds(10))
        #expect(activeWhenUnusable == [true])
        #expect(!harness.channel.isActive)
    }

    @Test func aConnectionErrorClosesTheConnection() throws {
        let harness = try Harness()
        try harness.settings([(.maxConcurrentStreams, 10)])
        harness.streamOpened(1)
        harness.connectionError()
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
