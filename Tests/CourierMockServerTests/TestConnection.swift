import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS

/// Errors of the raw test client.
enum TestClientError: Error, Equatable {
    /// The connection ended before a complete response head arrived.
    case closedBeforeHead(received: Int)
    /// The connection ended before the whole body arrived.
    case truncatedBody(received: Int)
    /// The response could not be parsed.
    case malformed(String)
    /// A test took longer than allowed.
    case timedOut
}

/// A response as parsed by the raw test client.
struct TestResponse: Sendable {
    var status: Int
    var reason: String
    var headers: [(name: String, value: String)]
    var body: [UInt8]

    func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    var text: String {
        String(decoding: body, as: UTF8.self)
    }
}

/// A minimal HTTP/1.1 client over one real loopback TCP (optionally TLS) connection, written directly on
/// NIO so the mock server is tested without Courier or URLSession.
final class TestConnection {
    private var iterator: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator
    private let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>
    private var received: [UInt8] = []
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

    /// Connects to `host:port`, runs `body` with the connection and closes it.
    ///
    /// - Parameters:
    ///   - tls: A TLS client context, or `nil` for plain TCP.
    ///   - serverHostname: The name to verify (and send as SNI); `nil` verifies the IP address.
    static func with<Result: Sendable>(
        host: String = "127.0.0.1",
        port: Int,
        tls: NIOSSLContext? = nil,
        serverHostname: String? = nil,
        _ body: (TestConnection) async throws -> Result
    ) async throws -> Result {
        let alpn = NIOLockedValueBox<String?>(nil)
        let handshake = NIOLockedValueBox<EventLoopPromise<Void>?>(nil)
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            // 30 s, not 5: a loopback connect waits only for the event loops, which a loaded machine running the
            // whole suite has held for longer than 5 s.
            .connectTimeout(.seconds(30))
            .connect(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tls {
                        let promise = channel.eventLoop.makePromise(of: Void.self)
                        handshake.withLockedValue { $0 = promise }
                        try channel.pipeline.syncOperations.addHandler(
                            NIOSSLClientHandler(context: tls, serverHostname: serverHostname)
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
            let connection = TestConnection(
                iterator: inbound.makeAsyncIterator(),
                outbound: outbound,
                negotiatedProtocol: alpn.withLockedValue { $0 }
            )
            return try await body(connection)
        }
    }

    /// Sends `text` as UTF-8.
    func send(_ text: String) async throws {
        try await send(Array(text.utf8))
    }

    /// Sends `bytes`.
    func send(_ bytes: [UInt8]) async throws {
        try await outbound.write(ByteBuffer(bytes: bytes))
    }

    /// Closes the sending side of the connection (TCP half-close); reading goes on.
    func finishSending() {
        outbound.finish()
    }

    /// Sends a request with a `Host` header, `extraHeaders` and, if given, a body with `Content-Length`.
    func sendRequest(
        _ method: String = "GET",
        _ target: String,
        headers extraHeaders: [String] = [],
        body: [UInt8]? = nil
    ) async throws {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: localhost\r\n"
        for header in extraHeaders {
            head += header + "\r\n"
        }
        if let body {
            head += "Content-Length: \(body.count)\r\n"
        }
        head += "\r\n"
        try await send(Array(head.utf8) + (body ?? []))
    }

    /// Reads one response. `isHead` says the request was `HEAD` (no body follows).
    func readResponse(isHead: Bool = false) async throws -> TestResponse {
        var response = try await readHead()
        let chunked = response.header("Transfer-Encoding")?.lowercased().contains("chunked") == true
        if isHead || response.status == 204 || response.status == 304 || response.status < 200 {
            return response
        }
        if chunked {
            response.body = try await readChunkedBody()
        } else if let lengthText = response.header("Content-Length") {
            guard let length = Int(lengthText) else { throw TestClientError.malformed("Content-Length") }
            response.body = try await readBytes(length)
        } else {
            response.body = try await readToEnd()
        }
        return response
    }

    /// Reads a response head only.
    func readHead() async throws -> TestResponse {
        let headBytes = try await readThrough([13, 10, 13, 10])
        let text = String(decoding: headBytes, as: UTF8.self)
        var lines = text.components(separatedBy: "\r\n").filter { !$0.isEmpty }
        guard !lines.isEmpty else { throw TestClientError.malformed("empty head") }
        let statusLine = lines.removeFirst().split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else {
            throw TestClientError.malformed("status line")
        }
        let headers = lines.map { line -> (name: String, value: String) in
            let parts = line.split(separator: ":", maxSplits: 1)
            let name = String(parts.first ?? "")
            let value = parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : ""
            return (name: name, value: value)
        }
        let reason = statusLine.count > 2 ? String(statusLine[2]) : ""
        return TestResponse(status: status, reason: reason, headers: headers, body: [])
    }

    /// Reads everything until the server closes the connection.
    func readToEnd() async throws -> [UInt8] {
        while try await fill() {}
        defer { received.removeAll() }
        return received
    }

    /// Whether the server closed the connection (reads and discards anything still sent).
    func isClosedByServer() async throws -> Bool {
        _ = try await readToEnd()
        return isAtEnd
    }

    private func readChunkedBody() async throws -> [UInt8] {
        var body: [UInt8] = []
        while true {
            let sizeLine = try await readThrough([13, 10])
            let sizeText = String(decoding: sizeLine.dropLast(2), as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16) else {
                throw TestClientError.malformed("chunk size \(sizeText)")
            }
            if size == 0 {
                _ = try await readThrough([13, 10])
                return body
            }
            body += try await readBytes(size)
            guard try await readBytes(2) == [13, 10] else { throw TestClientError.malformed("chunk end") }
        }
    }

    /// Reads exactly `count` bytes.
    func readBytes(_ count: Int) async throws -> [UInt8] {
        while received.count < count {
            guard try await fill() else { throw TestClientError.truncatedBody(received: received.count) }
        }
        let bytes = Array(received[..<count])
        received.removeFirst(count)
        return bytes
    }

    private func readThrough(_ terminator: [UInt8]) async throws -> [UInt8] {
        var searchStart = 0
        while true {
            if let end = find(terminator, from: searchStart) {
                let bytes = Array(received[..<end])
                received.removeFirst(end)
                return bytes
            }
            searchStart = max(0, received.count - terminator.count)
            guard try await fill() else { throw TestClientError.closedBeforeHead(received: received.count) }
        }
    }

    private func find(_ needle: [UInt8], from start: Int) -> Int? {
        guard received.count >= needle.count else { return nil }
        var index = start
        while index + needle.count <= received.count {
            if received[index..<(index + needle.count)].elementsEqual(needle) {
                return index + needle.count
            }
            index += 1
        }
        return nil
    }

    /// Reads more bytes; `false` at end of stream.
    private func fill() async throws -> Bool {
        guard !isAtEnd else { return false }
        do {
            guard let buffer = try await iterator.next() else {
                isAtEnd = true
                return false
            }
            received += buffer.readableBytesView
            return true
        } catch let error as ChannelError where error == .eof || error == .inputClosed {
            isAtEnd = true
            return false
        } catch is NIOSSLError {
            isAtEnd = true
            return false
        }
    }
}

/// Completes a promise when the TLS handshake finishes and records the negotiated ALPN protocol.
final class HandshakeObserver: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let promise: EventLoopPromise<Void>
    private let negotiatedProtocol: NIOLockedValueBox<String?>

    init(promise: EventLoopPromise<Void>, negotiatedProtocol: NIOLockedValueBox<String?>) {
        self.promise = promise
        self.negotiatedProtocol = negotiatedProtocol
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted(let negotiated) = event as? TLSUserEvent {
            negotiatedProtocol.withLockedValue { $0 = negotiated }
            promise.succeed()
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        promise.fail(error)
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        promise.fail(ChannelError.ioOnClosedChannel)
        context.fireChannelInactive()
    }
}
