import CourierMockServer
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import Testing

/// ``MockTCPServer`` tested with a raw NIO client (no Courier).
@Suite struct MockTCPServerTests {
    @Test func echoesAndClosesItsWriteSideAfterTheClients() async throws {
        let server = MockTCPServer(mode: .echo)
        try await server.start()
        defer { Task { await server.shutdown() } }
        let client = try await RawTCPClient.connect(port: server.port)
        try await client.send("hello")
        #expect(try await eventually { client.received == Array("hello".utf8) })
        try await client.closeWrite()
        #expect(try await eventually { client.sawEndOfInput })
        #expect(server.receivedBytes == Array("hello".utf8))
        #expect(server.endOfInputCount == 1)
        #expect(server.connectionCount == 1)
        try await client.close()
    }

    @Test func runsAScriptInOrder() async throws {
        let server = MockTCPServer(
            mode: .script([.send("one"), .wait(.milliseconds(50)), .receive(atLeast: 2), .send("two"), .closeWrite]))
        try await server.start()
        defer { Task { await server.shutdown() } }
        let client = try await RawTCPClient.connect(port: server.port)
        #expect(try await eventually { client.received == Array("one".utf8) })
        // The script waits for two bytes before it goes on.
        try await client.send("x")
        try await Task.sleep(for: .milliseconds(100))
        #expect(client.received == Array("one".utf8))
        #expect(!client.sawEndOfInput)
        try await client.send("y")
        #expect(try await eventually { client.sawEndOfInput })
        #expect(client.received == Array("onetwo".utf8))
        #expect(server.receivedBytes == Array("xy".utf8))
        try await client.close()
    }

    /// A script stops at a signal until the test fires it; a signal fired before the step is reached lets the script
    /// through at once.
    @Test func waitsForASignalTheTestFires() async throws {
        let later = MockTCPSignal()
        let already = MockTCPSignal()
        already.fire()
        let server = MockTCPServer(
            mode: .script([
                .send("one"), .waitForSignal(later), .send("two"), .waitForSignal(already), .send("three"), .closeWrite,
            ]))
        try await server.start()
        defer { Task { await server.shutdown() } }
        let client = try await RawTCPClient.connect(port: server.port)
        #expect(try await eventually { client.received == Array("one".utf8) })
        try await Task.sleep(for: .milliseconds(200))
        #expect(client.received == Array("one".utf8))
        #expect(!client.sawEndOfInput)
        later.fire()
        #expect(try await eventually { client.sawEndOfInput })
        #expect(client.received == Array("onetwothree".utf8))
        #expect(later == later && later != already)
        try await client.close()
    }

    @Test func turnsToTLSAfterTheCommandAndEchoesInside() async throws {
        let server = MockTCPServer(mode: .echo, startTLSCommand: "STARTTLS\r\n")
        try await server.start()
        defer { Task { await server.shutdown() } }
        let client = try await RawTCPClient.connect(port: server.port)
        try await client.send("plain\r\n")
        #expect(try await eventually { client.received == Array("plain\r\n".utf8) })
        try await client.send("STARTTLS\r\n")
        #expect(try await eventually { client.received == Array("plain\r\nREADY\r\n".utf8) })
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.trustRoots = .certificates([try NIOSSLCertificate(bytes: server.certificateDER, format: .der)])
        configuration.shutdownTimeout = .milliseconds(250)
        try await client.startTLS(NIOSSLContext(configuration: configuration), serverHostname: "localhost")
        try await client.send("secret")
        #expect(try await eventually { client.received == Array("plain\r\nREADY\r\nsecret".utf8) })
        #expect(server.receivedBytes == Array("plain\r\nSTARTTLS\r\nsecret".utf8))
        try await client.close()
    }

    @Test func silentServerReadsNothing() async throws {
        let server = MockTCPServer(mode: .silent)
        try await server.start()
        defer { Task { await server.shutdown() } }
        let client = try await RawTCPClient.connect(port: server.port)
        try await client.send("ignored")
        // The server accepts on its own loop: wait for it rather than for a fixed time (CI stalled past 100 ms).
        #expect(try await eventually { server.connectionCount == 1 })
        try await Task.sleep(for: .milliseconds(100))
        #expect(server.receivedBytes.isEmpty)
        try await client.close()
    }

    @Test func startsOnceAndShutsDownItsConnections() async throws {
        let server = MockTCPServer()
        try await server.start()
        await #expect(throws: MockServerError.alreadyStarted) { try await server.start() }
        let client = try await RawTCPClient.connect(port: server.port)
        #expect(try await eventually { server.connectionCount == 1 })
        await server.shutdown()
        #expect(try await eventually { client.sawEndOfInput || !client.isActive })
    }
}

/// A raw TCP client: records what it receives and whether the server closed its write side.
private final class RawTCPClient: Sendable {
    private let channel: any Channel
    private let collector: Collector.Box

    private init(channel: any Channel, collector: Collector.Box) {
        self.channel = channel
        self.collector = collector
    }

    static func connect(port: Int) async throws -> RawTCPClient {
        let box = Collector.Box(([], false))
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.allowRemoteHalfClosure, value: true)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(Collector(box)) }
            }
            .connect(host: "127.0.0.1", port: port).get()
        return RawTCPClient(channel: channel, collector: box)
    }

    var received: [UInt8] { collector.withLockedValue { $0.bytes } }
    var sawEndOfInput: Bool { collector.withLockedValue { $0.ended } }
    var isActive: Bool { channel.isActive }

    func send(_ text: String) async throws {
        try await channel.writeAndFlush(ByteBuffer(string: text))
    }

    func closeWrite() async throws {
        try await channel.close(mode: .output)
    }

    func close() async throws {
        try? await channel.close()
    }

    func startTLS(_ context: NIOSSLContext, serverHostname: String) async throws {
        try await channel.eventLoop.submit { [channel] in
            try channel.pipeline.syncOperations.addHandler(
                NIOSSLClientHandler(context: context, serverHostname: serverHostname), position: .first)
        }.get()
    }
}

private final class Collector: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    typealias Box = NIOLockedValueBox<(bytes: [UInt8], ended: Bool)>

    private let box: Box

    init(_ box: Box) {
        self.box = box
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        box.withLockedValue { $0.bytes.append(contentsOf: bytes.readableBytesView) }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed {
            box.withLockedValue { $0.ended = true }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        box.withLockedValue { $0.ended = true }
        context.fireChannelInactive()
    }
}
