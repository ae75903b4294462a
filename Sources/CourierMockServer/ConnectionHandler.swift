import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL

/// Serves the requests of one connection: records each complete request, picks its response from the
/// ``ServerState`` and writes it with a ``ResponseWriter``. Requests that arrive while a response is being
/// written are answered in order afterwards. When the client half-closes its side, the requests already received
/// are answered and then the connection is closed. A request for a WebSocket route gets the opening handshake's
/// answer; after a `101` the connection leaves HTTP for a ``WebSocketSession``.
///
/// On an HTTP/2 stream the "connection" is the stream channel, carrying one request: its HTTP/1.1 response bytes
/// are turned into HTTP/2 frames by ``HTTP1ResponseBytesToParts``, closing it resets the stream, and the response's
/// ``MockResponse/http2Misbehaviour`` is carried out.
final class ConnectionHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = ByteBuffer

    private struct PendingRequest {
        var request: RecordedRequest
        var keepAlive: Bool
        /// The parser reads nothing after this request (see ``ConnectionHandler/stopsTheParser(_:)``).
        var stopsTheParser = false
    }

    private let state: ServerState
    private let connectionID: Int
    /// The stream this handler serves, when it serves an HTTP/2 stream.
    private let http2Stream: HTTP2StreamEndpoint?
    private var current: RequestAccumulator?
    private var pending: [PendingRequest] = []
    private var writer: ResponseWriter?
    /// Set once the connection is going to close, or once a response chose never to answer.
    private var isDone = false
    /// Set when the client has closed its sending side.
    private var isInputClosed = false
    /// Set when a response chose never to answer; such a connection closes when the client's side closes.
    private var isStalled = false

    init(state: ServerState, connectionID: Int, http2Stream: HTTP2StreamEndpoint? = nil) {
        self.state = state
        self.connectionID = connectionID
        self.http2Stream = http2Stream
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            current = RequestAccumulator(head: head)
            if expectsContinue(head) && writer == nil && pending.isEmpty && !isDone {
                write(context: context, "HTTP/1.1 100 Continue\r\n\r\n")
            }
        case .body(let buffer):
            current?.append(buffer)
        case .end:
            guard let accumulator = current else { return }
            current = nil
            var request = accumulator.finish(connectionID: connectionID)
            request.clientCertificateDER = clientCertificate(context: context)
            request.receivedAt = Date()
            request.clientPort = context.channel.remoteAddress?.port
            if let http2Stream {
                request.streamID = http2Stream.streamID
                request.headers = http2Stream.requestFields ?? request.headers
            }
            state.record(request)
            let head = accumulator.head
            // HTTP/1.0 always closes; HTTP/1.1 unless the client sent `Connection: close`; an HTTP/2 stream ends
            // with its response by itself.
            let keepAlive =
                http2Stream != nil || (head.version.major == 1 && head.version.minor >= 1 && head.isKeepAlive)
            pending.append(
                PendingRequest(
                    request: request,
                    keepAlive: keepAlive,
                    stopsTheParser: http2Stream == nil && Self.stopsTheParser(head)
                )
            )
            answerNext(context: context)
        }
    }

    /// The certificate the client presented on this connection, if it is TLS and presented one.
    private func clientCertificate(context: ChannelHandlerContext) -> [UInt8]? {
        // An HTTP/2 stream's TLS handler is in its parent's (the connection's) pipeline, on the same event loop. (A
        // TCP connection's parent is the listening socket: not the place to look.)
        let connection = http2Stream != nil ? context.channel.parent ?? context.channel : context.channel
        let tls = try? connection.pipeline.syncOperations.handler(type: NIOSSLServerHandler.self)
        return try? tls?.peerCertificate?.toDERBytes()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .inputClosed = event as? ChannelEvent {
            isInputClosed = true
            closeIfIdleAfterInputClosed(context: context)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        writer?.writabilityChanged()
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        isDone = true
        writer?.cancel()
        writer = nil
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if error is HTTPParserError && writer == nil && pending.isEmpty && !isDone {
            isDone = true
            let response = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            var buffer = context.channel.allocator.buffer(capacity: response.utf8.count)
            buffer.writeString(response)
            context.writeAndFlush(NIOAny(buffer)).assumeIsolated().whenComplete { _ in
                context.close(promise: nil)
            }
        } else {
            isDone = true
            context.close(promise: nil)
        }
    }

    /// Whether NIO's HTTP/1 parser (llhttp) reads nothing after this request, whatever the answer: a `CONNECT`, or a
    /// request with an `Upgrade` field and the `upgrade` token in `Connection`. Unless the answer switches protocols,
    /// the connection must then close after it: requests that follow on it would never be read.
    private static func stopsTheParser(_ head: HTTPRequestHead) -> Bool {
        if head.method == .CONNECT { return true }
        guard head.headers.contains(name: "Upgrade") else { return false }
        return head.headers["Connection"].contains { value in
            value.split(separator: ",").contains { $0.trimmingSpaces().lowercased() == "upgrade" }
        }
    }

    private func expectsContinue(_ head: HTTPRequestHead) -> Bool {
        (head.version == .http1_1 || head.version.major == 2)
            && head.headers["Expect"].contains { $0.trimmingSpaces().lowercased() == "100-continue" }
    }

    private func write(context: ChannelHandlerContext, _ text: String) {
        var buffer = context.channel.allocator.buffer(capacity: text.utf8.count)
        buffer.writeString(text)
        context.writeAndFlush(NIOAny(buffer), promise: nil)
    }

    private func closeIfIdleAfterInputClosed(context: ChannelHandlerContext) {
        guard isInputClosed, writer == nil, pending.isEmpty, !isDone || isStalled else { return }
        isDone = true
        isStalled = false
        context.close(promise: nil)
    }

    private func answerNext(context: ChannelHandlerContext) {
        guard writer == nil, !isDone, !pending.isEmpty else {
            if isStalled {
                pending.removeAll()
            }
            closeIfIdleAfterInputClosed(context: context)
            return
        }
        let next = pending.removeFirst()
        if let endpoint = state.webSockets.endpoint(path: next.request.path) {
            answerWebSocketRequest(next, endpoint: endpoint, context: context)
            return
        }
        answer(next, with: state.response(for: next.request), context: context)
    }

    /// Switches the connection to WebSocket, or answers what the handshake says instead and closes: the HTTP/1.1
    /// parser reads nothing after an upgrade request. (Only HTTP/1.1 requests pass the handshake, never an HTTP/2
    /// stream's.)
    private func answerWebSocketRequest(
        _ next: PendingRequest,
        endpoint: MockWebSocketEndpoint,
        context: ChannelHandlerContext
    ) {
        switch WebSocketHandshake(request: next.request, endpoint: endpoint).outcome {
        case .switchProtocols(let head):
            isDone = true
            pending.removeAll()
            WebSocketUpgrade.switchProtocols(
                context: context,
                head: head,
                session: WebSocketSession(path: next.request.path, endpoint: endpoint, registry: state.webSockets)
            )
        case .refuse(let response):
            answer(next, with: response, forceClose: http2Stream == nil, context: context)
        }
    }

    /// Answers `next` with `response`, closing the connection afterwards if `forceClose` is set.
    private func answer(
        _ next: PendingRequest,
        with response: MockResponse,
        forceClose: Bool = false,
        context: ChannelHandlerContext
    ) {
        if let http2Stream, let misbehaviour = response.http2Misbehaviour,
            http2Stream.perform(misbehaviour, response: response)
        {
            isDone = true
            pending.removeAll()
            return
        }
        if response.closeWithoutResponse {
            isDone = true
            context.close(promise: nil)
            return
        }
        if response.neverRespond {
            isDone = true
            isStalled = true
            pending.removeAll()
            closeIfIdleAfterInputClosed(context: context)
            return
        }
        if let raw = response.raw {
            isDone = true
            Self.writeRaw(
                raw[...],
                pieceSize: max(1, response.chunkSize),
                delay: response.chunkDelay,
                withoutTLSCloseNotify: response.closesWithoutTLSCloseNotify,
                context: context
            )
            return
        }

        let closesConnection =
            response.closeConnection || response.header("Connection")?.lowercased().contains("close") == true
        let closing =
            forceClose || !next.keepAlive || (next.stopsTheParser && response.status != 101)
            || response.closeAfterBodyBytes != nil || (isInputClosed && pending.isEmpty)
            || (closesConnection && http2Stream == nil)
        if closing {
            isDone = true
        }
        let writer = ResponseWriter(
            context: context,
            response: response,
            isHeadRequest: next.request.method.uppercased() == "HEAD",
            closing: closing,
            onFinish: { [weak self] in
                guard let self else { return }
                self.writer = nil
                self.answerNext(context: context)
            }
        )
        self.writer = writer
        writer.start()
    }

    /// Closes the connection; `withoutTLSCloseNotify` ends TCP under TLS without its `close_notify` alert: the close
    /// starts at the TLS handler's own context, so it goes to the socket without passing through that handler.
    static func close(_ context: ChannelHandlerContext, withoutTLSCloseNotify: Bool) {
        if withoutTLSCloseNotify,
            let tls = try? context.pipeline.syncOperations.context(handlerType: NIOSSLServerHandler.self)
        {
            tls.close(promise: nil)
        } else {
            context.close(promise: nil)
        }
    }

    /// Writes `raw` in pieces of `pieceSize` bytes, `delay` apart, then closes the connection.
    private static func writeRaw(
        _ raw: Data.SubSequence,
        pieceSize: Int,
        delay: Duration,
        withoutTLSCloseNotify: Bool,
        context: ChannelHandlerContext
    ) {
        guard context.channel.isActive else { return }
        let piece = raw.prefix(pieceSize)
        let rest = raw.dropFirst(piece.count)
        var buffer = context.channel.allocator.buffer(capacity: piece.count)
        buffer.writeBytes(piece)
        let written = context.writeAndFlush(NIOAny(buffer))
        guard !rest.isEmpty else {
            written.assumeIsolated().whenComplete { _ in
                close(context, withoutTLSCloseNotify: withoutTLSCloseNotify)
            }
            return
        }
        guard delay > .zero else {
            writeRaw(
                rest, pieceSize: pieceSize, delay: delay, withoutTLSCloseNotify: withoutTLSCloseNotify,
                context: context)
            return
        }
        context.eventLoop.assumeIsolated().scheduleTask(in: TimeAmount(delay)) {
            writeRaw(
                rest, pieceSize: pieceSize, delay: delay, withoutTLSCloseNotify: withoutTLSCloseNotify,
                context: context)
        }
    }
}
