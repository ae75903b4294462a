import CourierHTTP
import NIOCore
import NIOEmbedded
import Testing

@testable import CourierTransport

/// Records what reaches the handlers after the tunnel: activation, bytes and errors.
private final class AfterTunnel: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    var active = false
    var received: [String] = []
    var errors: [any Error] = []

    func channelActive(context: ChannelHandlerContext) { active = true }
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        received.append(String(buffer: unwrapInboundIn(data)))
    }
    func errorCaught(context: ChannelHandlerContext, error: any Error) { errors.append(error) }
}

@Suite("TunnelConnectHandler")
struct TunnelConnectHandlerTests {
    private func start(authorization: String? = nil) throws -> (EmbeddedChannel, AfterTunnel) {
        let after = AfterTunnel()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(
            TunnelConnectHandler(authority: "origin.example:443", authorization: authorization))
        try channel.pipeline.syncOperations.addHandler(after)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 3128)).wait()
        return (channel, after)
    }

    @Test func theTunnelOpensOnA2xxSplitAnywhereAndPassesWhatFollows() throws {
        let answer = "HTTP/1.1 200 Connection Established\r\nVia: proxy\r\n\r\nfirst bytes"
        for split in 1..<answer.utf8.count {
            let (channel, after) = try start(authorization: "Basic dTpw")
            let written = try #require(try channel.readOutbound(as: ByteBuffer.self))
            #expect(
                String(buffer: written)
                    == "CONNECT origin.example:443 HTTP/1.1\r\nHost: origin.example:443\r\nProxy-Authorization: Basic dTpw\r\n\r\n"
            )
            #expect(!after.active)  // TLS must not start before the tunnel is open
            let bytes = Array(answer.utf8)
            try channel.writeInbound(ByteBuffer(bytes: bytes[..<split]))
            try channel.writeInbound(ByteBuffer(bytes: bytes[split...]))
            #expect(after.active)
            #expect(after.received.joined() == "first bytes")
            try channel.writeInbound(ByteBuffer(string: "later"))
            #expect(after.received.joined() == "first byteslater")
            _ = try? channel.finish()
        }
    }

    /// An interim `100` before the `200`, split anywhere: skipped, as for any request. It was taken for the final
    /// answer, a refusal with status 100, and the task completed with it as if it were the origin's response.
    @Test func anInterimAnswerIsSkippedAndTheFinalOneOpensTheTunnel() throws {
        let answer = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 Connection Established\r\n\r\nfirst bytes"
        for split in 1..<answer.utf8.count {
            let (channel, after) = try start()
            _ = try channel.readOutbound(as: ByteBuffer.self)
            let bytes = Array(answer.utf8)
            try channel.writeInbound(ByteBuffer(bytes: bytes[..<split]))
            try channel.writeInbound(ByteBuffer(bytes: bytes[split...]))
            #expect(after.errors.isEmpty, "split at \(split)")
            #expect(after.active && after.received.joined() == "first bytes", "split at \(split)")
            _ = try? channel.finish()
        }
    }

    /// A `101` is no interim answer to `CONNECT`: it refuses the tunnel. Endless interim answers fail it.
    @Test func a101RefusesAndEndlessInterimAnswersFail() throws {
        let (channel, after) = try start()
        _ = try channel.readOutbound(as: ByteBuffer.self)
        try channel.writeInbound(ByteBuffer(string: "HTTP/1.1 101 Switching Protocols\r\n\r\n"))
        #expect((after.errors.first as? ProxyTunnelRefusal)?.status == 101)
        _ = try? channel.finish()
        let (flooded, floodedAfter) = try start()
        _ = try flooded.readOutbound(as: ByteBuffer.self)
        try flooded.writeInbound(ByteBuffer(string: String(repeating: "HTTP/1.1 102 Processing\r\n\r\n", count: 101)))
        #expect((floodedAfter.errors.first as? TransferError)?.urlErrorCode == .badServerResponse)
        #expect(!floodedAfter.active)
        _ = try? flooded.finish()
    }

    @Test func aRefusalCarriesItsStatusAndFields() throws {
        let (channel, after) = try start()
        _ = try channel.readOutbound(as: ByteBuffer.self)
        try channel.writeInbound(
            ByteBuffer(
                string: "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"p\"\r\n\r\n"))
        #expect(!after.active)
        let refusal = try #require(after.errors.first as? ProxyTunnelRefusal)
        #expect(refusal.status == 407 && refusal.reason == "Proxy Authentication Required")
        #expect(refusal.headers.first?.0 == "Proxy-Authenticate" && refusal.headers.first?.1 == "Basic realm=\"p\"")
        _ = try? channel.finish()
    }

    /// A proxy that trickles its answer a byte per read, up to the 64 KiB limit. Each read once copied the answer so
    /// far and searched all of it again for the blank line: some 4 GB of work, seconds of the event loop. Not a speed
    /// check: 0.33 s linear and 113 s quadratic in a debug build here, and the bound between them.
    @Test func anAnswerTrickledAByteAtATimeCostsTimeLinearInItsLength() throws {
        let (channel, after) = try start()
        _ = try channel.readOutbound(as: ByteBuffer.self)
        try channel.writeInbound(ByteBuffer(string: "HTTP/1.1 200 OK\r\nX: "))
        let byte = ByteBuffer(string: "a")
        let elapsed = try ContinuousClock().measure {
            for _ in 0..<60_000 {
                try channel.writeInbound(byte)
            }
        }
        #expect(elapsed < .seconds(30), "trickling a 60 KB answer took \(elapsed)")
        try channel.writeInbound(ByteBuffer(string: "\r\n\r\nfirst"))
        #expect(after.active)
        #expect(after.received.joined() == "first")
        _ = try? channel.finish()
    }

    @Test(arguments: ["SSH-2.0-OpenSSH\r\n\r\n", "HTTP/1.1 200 OK\r\nX: " + String(repeating: "a", count: 70_000)])
    func nonsenseOrEndlessAnswersFail(answer: String) throws {
        let (channel, after) = try start()
        _ = try channel.readOutbound(as: ByteBuffer.self)
        try channel.writeInbound(ByteBuffer(string: answer))
        #expect(!after.active)
        #expect((after.errors.first as? TransferError)?.urlErrorCode == .badServerResponse)
        _ = try? channel.finish()
    }
}
