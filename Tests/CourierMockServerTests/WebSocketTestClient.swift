import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL

@testable import CourierMockServer

/// One WebSocket frame as the test client read it off the wire.
struct TestFrame: Equatable {
    var fin: Bool
    var rsv: UInt8
    var opcode: UInt8
    var masked: Bool
    /// The payload, unmasked.
    var payload: [UInt8]

    /// A frame as the server must send it: no reserved bits, not masked.
    static func unmasked(_ opcode: UInt8, _ payload: [UInt8], fin: Bool = true) -> TestFrame {
        TestFrame(fin: fin, rsv: 0, opcode: opcode, masked: false, payload: payload)
    }

    var text: String {
        String(decoding: payload, as: UTF8.self)
    }

    /// The code of a close frame's payload, or `nil` when it has none.
    var closeCode: UInt16? {
        payload.count >= 2 ? UInt16(payload[0]) << 8 | UInt16(payload[1]) : nil
    }

    /// The reason of a close frame's payload.
    var closeReason: String {
        String(decoding: payload.dropFirst(2), as: UTF8.self)
    }
}

/// A minimal WebSocket client over one real loopback TCP (optionally TLS) connection, written directly on NIO: it
/// writes the upgrade request and its frames by hand (masked, built with ``MockWebSocketFrame``) and parses every byte
/// the server sends, so the test sees the server's frames exactly as they went on the wire.
final class WebSocketTestClient {
    /// The key of RFC 6455's own example (§1.3), whose accept value is `s3pPLMBiTxaQ9kYGzzhZRbK+xOo=`.
    static let exampleKey = "dGhlIHNhbXBsZSBub25jZQ=="

    private var iterator: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator
    /// The sending side; it is `Sendable`, so a task can keep writing while the test reads.
    let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>
    private var received = ByteBuffer()
    private var isAtEnd = false
    /// The ALPN protocol negotiated by TLS, if any.
    let negotiatedProtocol: String?

    private init(
        iterator: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator,
        outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>,
        negotiatedProtocol: String?
    ) {
        self.iterator = iterator
        self.outbound = outbound
        self.negotiatedProtocol = negotiatedProtocol
    }

    /// Connects to the server (TLS trusting its certificate, offering ALPN `http/1.1`, for `.https` and `.http2`
    /// servers when `tls` is set), runs `body` with the connection and closes it.
    static func with<Result: Sendable>(
        _ server: MockServer,
        tls: Bool = false,
        _ body: (WebSocketTestClient) async throws -> Result
    ) async throws -> Result {
        let tlsContext = tls ? try clientTLSContext(trusting: server, applicationProtocols: ["http/1.1"]) : nil
        let alpn = NIOLockedValueBox<String?>(nil)
        let handshake = NIOLockedValueBox<EventLoopPromise<Void>?>(nil)
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            // 30 s, not 5: a loopback connect waits only for the event loops, which a loaded machine running the
            // whole suite has held for longer than 5 s.
            .connectTimeout(.seconds(30))
            .connect(host: "127.0.0.1", port: server.port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tlsContext {
                        let promise = channel.eventLoop.makePromise(of: Void.self)
                        handshake.withLockedValue { $0 = promise }
                        try channel.pipeline.syncOperations.addHandler(
                            NIOSSLClientHandler(context: tlsContext, serverHostname: "localhost")
                        )
                        try channel.pipeline.syncOperations.addHandler(
                            HandshakeObserver(promise: promise, negotiatedProtocol: alpn)
                        )
                    }
                    return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(
                        wrappingChannelSynchronously: channel,
                        configuration: .init(isOutboundHalfClosureEnabled: true)
                    )
                }
            }
        if let promise = handshake.withLockedValue({ $0 }) {
            do {
                try await promise.futureResult.get()
            } catch {
                try? await channel.channel.close()
                throw error
            }
        }
        return try await channel.executeThenClose { inbound, outbound in
            let client = WebSocketTestClient(
                iterator: inbound.makeAsyncIterator(),
                outbound: outbound,
                negotiatedProtocol: alpn.withLockedValue { $0 }
            )
            return try await body(client)
        }
    }

    // MARK: Handshake

    /// The upgrade request for `target`: `GET` with `Host`, `Upgrade`, `Connection`, the key and version 13, then
    /// `headers` (whole lines, e.g. `"Cookie: a=1"`).
    static func upgradeRequest(_ target: String, key: String = exampleKey, headers: [String] = []) -> String {
        var head = "GET \(target) HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        head += "Sec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n"
        for header in headers {
            head += header + "\r\n"
        }
        return head + "\r\n"
    }

    /// Sends the upgrade request for `target` and reads the response head.
    func upgrade(_ target: String, key: String = exampleKey, headers: [String] = []) async throws -> TestResponse {
        try await send(Array(Self.upgradeRequest(target, key: key, headers: headers).utf8))
        return try await readHead()
    }

    /// Reads a response head (and, when it has a `Content-Length`, its body).
    func readHead() async throws -> TestResponse {
        var headBytes: [UInt8] = []
        while !headBytes.suffix(4).elementsEqual([13, 10, 13, 10]) {
            headBytes += try await readBytes(1)
        }
        var lines = String(decoding: headBytes, as: UTF8.self).components(separatedBy: "\r\n").filter { !$0.isEmpty }
        guard !lines.isEmpty else { throw TestClientError.malformed("empty head") }
        let statusLine = lines.removeFirst().split(separator: " ", maxSplits: 2)
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else {
            throw TestClientError.malformed("status line")
        }
        let headers = lines.map { line -> (name: String, value: String) in
            let parts = line.split(separator: ":", maxSplits: 1)
            return (String(parts[0]), parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : "")
        }
        var response = TestResponse(
            status: status,
            reason: statusLine.count > 2 ? String(statusLine[2]) : "",
            headers: headers,
            body: []
        )
        if status != 101, let length = response.header("Content-Length").flatMap({ Int($0) }) {
            response.body = try await readBytes(length)
        }
        return response
    }

    // MARK: Sending

    /// Sends `bytes` verbatim.
    func send(_ bytes: [UInt8]) async throws {
        try await outbound.write(ByteBuffer(bytes: bytes))
    }

    /// Sends one masked frame.
    func sendFrame(opcode: UInt8, fin: Bool = true, payload: [UInt8]) async throws {
        try await send(MockWebSocketFrame.bytes(opcode: opcode, fin: fin, masked: true, payload: payload))
    }

    /// Sends a text message in one masked frame.
    func send(text: String) async throws {
        try await sendFrame(opcode: MockWebSocketFrame.Opcode.text, payload: Array(text.utf8))
    }

    /// Sends a close frame with `code` and `reason`, or an empty one when `code` is `nil`.
    func sendClose(code: UInt16?, reason: String = "") async throws {
        let payload = code.map { MockWebSocketFrame.closePayload(code: $0, reason: reason) } ?? []
        try await sendFrame(opcode: MockWebSocketFrame.Opcode.close, payload: payload)
    }

    // MARK: Receiving

    /// Reads one frame, unmasking its payload if it is masked.
    func readFrame() async throws -> TestFrame {
        let header = try await readBytes(2)
        var length = Int(header[1] & 0x7F)
        if length == 126 {
            length = try await readBytes(2).reduce(0) { $0 << 8 | Int($1) }
        } else if length == 127 {
            length = try await readBytes(8).reduce(0) { $0 << 8 | Int($1) }
        }
        let masked = header[1] & 0x80 != 0
        let key = masked ? try await readBytes(4) : []
        var payload = try await readBytes(length)
        if masked {
            for index in payload.indices {
                payload[index] ^= key[index % 4]
            }
        }
        return TestFrame(
            fin: header[0] & 0x80 != 0,
            rsv: header[0] >> 4 & 0x7,
            opcode: header[0] & 0xF,
            masked: masked,
            payload: payload
        )
    }

    /// Reads exactly `count` bytes.
    func readBytes(_ count: Int) async throws -> [UInt8] {
        while received.readableBytes < count {
            guard try await fill() else { throw TestClientError.truncatedBody(received: received.readableBytes) }
        }
        let bytes = received.readBytes(length: count) ?? []
        if received.readerIndex > 1024 * 1024 {
            received.discardReadBytes()
        }
        return bytes
    }

    /// Reads everything until the server closes the connection.
    func readToEnd() async throws -> [UInt8] {
        while try await fill() {}
        return received.readBytes(length: received.readableBytes) ?? []
    }

    /// Reads more bytes; `false` at end of stream.
    private func fill() async throws -> Bool {
        guard !isAtEnd else { return false }
        do {
            guard var buffer = try await iterator.next() else {
                isAtEnd = true
                return false
            }
            received.writeBuffer(&buffer)
            return true
        } catch let error as ChannelError where error == .eof || error == .inputClosed {
            isAtEnd = true
            return false
        } catch is NIOSSLError {
            isAtEnd = true
            return false
        } catch let error as IOError where error.errnoCode == ECONNRESET {
            // A server that closes while bytes of ours are still unread resets the connection: also its end.
            isAtEnd = true
            return false
        }
    }
}
