import CourierHTTP
import Foundation
import NIOCore
import NIOEmbedded
import Testing

@testable import CourierTransport

/// Records what reaches the handlers after the SOCKS handshake.
private final class AfterSOCKS: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    var active = false
    var received: [UInt8] = []
    var errors: [any Error] = []

    func channelActive(context: ChannelHandlerContext) { active = true }
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        received += buffer.readBytes(length: buffer.readableBytes) ?? []
    }
    func errorCaught(context: ChannelHandlerContext, error: any Error) { errors.append(error) }
}

@Suite("SOCKSConnectHandler")
struct SOCKSConnectHandlerTests {
    private func start(host: String, user: String? = nil) throws -> (EmbeddedChannel, AfterSOCKS) {
        let after = AfterSOCKS()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(
            SOCKSConnectHandler(host: host, port: 8443, user: user, password: user.map { _ in "pw" }))
        try channel.pipeline.syncOperations.addHandler(after)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1080)).wait()
        return (channel, after)
    }

    private func written(_ channel: EmbeddedChannel) throws -> [UInt8] {
        var bytes: [UInt8] = []
        while var buffer = try channel.readOutbound(as: ByteBuffer.self) {
            bytes += buffer.readBytes(length: buffer.readableBytes) ?? []
        }
        return bytes
    }

    /// Feeds `bytes` one at a time.
    private func feed(_ bytes: [UInt8], to channel: EmbeddedChannel) throws {
        for byte in bytes { try channel.writeInbound(ByteBuffer(bytes: [byte])) }
    }

    @Test func usernamePasswordThenADomainConnectOpensTheConnection() throws {
        let (channel, after) = try start(host: "origin.example", user: "me")
        #expect(try written(channel) == [0x05, 0x02, 0x00, 0x02])
        try feed([0x05, 0x02], to: channel)
        #expect(try written(channel) == [0x01, 0x02] + Array("me".utf8) + [0x02] + Array("pw".utf8))
        try feed([0x01, 0x00], to: channel)
        #expect(try written(channel) == [0x05, 0x01, 0x00, 0x03, 14] + Array("origin.example".utf8) + [0x20, 0xFB])
        #expect(!after.active)
        // A reply with a domain as the bound address, then the first bytes of the origin, split byte by byte.
        try feed([0x05, 0x00, 0x00, 0x03, 0x01, UInt8(ascii: "x"), 0x00, 0x50] + Array("HTTP".utf8), to: channel)
        #expect(after.active)
        #expect(after.received == Array("HTTP".utf8))
        _ = try? channel.finish()
    }

    @Test(arguments: [
        ("127.0.0.1", [0x01, 127, 0, 0, 1] as [UInt8]),
        ("::1", [0x04] + Array(repeating: 0, count: 15) + [1]),
    ])
    func addressesAreSentAsAddresses(host: String, encoded: [UInt8]) throws {
        let (channel, after) = try start(host: host)
        #expect(try written(channel) == [0x05, 0x01, 0x00])
        try channel.writeInbound(ByteBuffer(bytes: [0x05, 0x00]))
        #expect(try written(channel) == [0x05, 0x01, 0x00] + encoded + [0x20, 0xFB])
        try channel.writeInbound(ByteBuffer(bytes: [0x05, 0x00, 0x00, 0x01, 127, 0, 0, 1, 0x04, 0x38]))
        #expect(after.active)
        _ = try? channel.finish()
    }

    @Test(arguments: [
        ([0x05, 0xFF] as [UInt8], URLError.Code.userAuthenticationRequired),
        ([0x05, 0x02, 0x01, 0x01], .userAuthenticationRequired),
        ([0x05, 0x00, 0x05, 0x05, 0x00, 0x01, 0, 0, 0, 0, 0, 0], .cannotConnectToHost),
        ([0x05, 0x00, 0x05, 0x02, 0x00, 0x01, 0, 0, 0, 0, 0, 0], .cannotConnectToHost),
        ([0x05, 0x00, 0x05, 0x00, 0x00, 0x09, 0, 0, 0, 0, 0, 0], .cannotConnectToHost),
    ])
    func refusalsFailTheConnection(replies: [UInt8], code: URLError.Code) throws {
        let (channel, after) = try start(host: "origin.example", user: "me")
        try channel.writeInbound(ByteBuffer(bytes: replies))
        #expect(!after.active)
        #expect((after.errors.first as? TransferError)?.urlErrorCode == code)
        _ = try? channel.finish()
    }
}
