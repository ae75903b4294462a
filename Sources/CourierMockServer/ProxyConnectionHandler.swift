import NIOCore
import NIOHTTP1
import NIOPosix

/// Serves one client connection of a ``MockProxy``: records each request head, refuses what the proxy does not
/// allow, opens `CONNECT` tunnels (then hands the connection to a pair of ``ProxyTunnelHandler``s) and forwards
/// absolute-form requests to their origin over a connection of their own.
final class ProxyConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private enum Mode {
        /// Waiting for the next request head.
        case idle
        /// A refused request that keeps the connection open: its body is dropped until its end.
        case discardingBody
        /// A refusal was sent and the connection closes; whatever else arrives is ignored.
        case closing
        /// Connecting to a `CONNECT` target.
        case connectingTunnel
        /// The tunnel is up; the pipeline now belongs to the tunnel handlers.
        case tunnel
        /// An absolute-form request is being forwarded; the connection closes when the origin's response ends.
        case forwarding
    }

    /// The connection attempt to an origin gives up after this long (loopback answers at once, but a target that
    /// drops packets must not keep the client waiting forever).
    private static let connectTimeout = TimeAmount.seconds(5)

    private let state: ProxyState<ProxiedRequest>
    private let connectionID: Int
    private let credentials: ProxyCredentialCheck?
    private var mode = Mode.idle
    /// A read the channel asked for while the proxy did not want more bytes yet (connecting, or the origin is not
    /// taking request bytes).
    private var pendingRead = false

    // Forwarding state of the current absolute-form request.
    private var relay: ProxyResponseRelay?
    /// Request bytes produced before the origin connection was up.
    private var pendingUpstreamBytes: [ByteBuffer] = []
    private var isRequestComplete = false
    private var isBodyChunked = false
    private var recordIndex = 0
    private var statusSniffer = ResponseStatusSniffer()
    private var context: ChannelHandlerContext?

    init(state: ProxyState<ProxiedRequest>, connectionID: Int, credentials: ProxyCredentialCheck?) {
        self.state = state
        self.connectionID = connectionID
        self.credentials = credentials
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    // MARK: Requests

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            guard case .idle = mode else { return }  // e.g. a request pipelined behind a forwarded one
            received(head, context: context)
        case .body(let buffer):
            guard case .forwarding = mode, !isRequestComplete, buffer.readableBytes > 0 else { return }
            sendUpstream(isBodyChunked ? Self.chunk(buffer, allocator: context.channel.allocator) : buffer)
        case .end(let trailers):
            switch mode {
            case .discardingBody:
                mode = .idle
            case .forwarding where !isRequestComplete:
                isRequestComplete = true
                if isBodyChunked {
                    var last = "0\r\n"
                    for field in trailers ?? [:] {
                        last += "\(field.name): \(field.value)\r\n"
                    }
                    last += "\r\n"
                    sendUpstream(context.channel.allocator.buffer(string: last))
                }
                relay?.flush()
            default:
                break
            }
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        relay?.flush()
        context.fireChannelReadComplete()
    }

    private func received(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        let request = ProxiedRequest(
            method: head.method.rawValue,
            target: head.uri,
            headers: head.headers.map { (name: $0.name, value: $0.value) },
            connectionID: connectionID,
            answeredStatus: 0
        )
        recordIndex = state.record(request)
        let isConnect = head.method == .CONNECT
        let parsed = isConnect ? ProxyTarget(connectAuthority: head.uri) : ProxyTarget(absoluteURI: head.uri)
        guard let target = parsed else {
            // Origin-form (`GET /x`), an `https://` URI or a malformed authority: not something to proxy.
            refuse(context: context, status: 400, reason: "Bad Request", keepOpen: false)
            return
        }
        if let credentials, !credentials.accepts(head.headers) {
            // An absolute-form client may retry on the same connection; a refused CONNECT closes, as proxies
            // commonly do, so the client cannot mistake later bytes for tunnel data.
            refuse(
                context: context, status: 407, reason: "Proxy Authentication Required",
                extraHeaders: [("Proxy-Authenticate", credentials.challenge)],
                keepOpen: !isConnect && head.isKeepAlive
            )
            return
        }
        guard target.isLoopback else {
            refuse(context: context, status: 403, reason: "Forbidden", keepOpen: false)
            return
        }
        if isConnect {
            openTunnel(to: target, context: context)
        } else {
            forward(head, to: target, context: context)
        }
    }

    // MARK: Refusals

    private func refuse(
        context: ChannelHandlerContext,
        status: Int,
        reason: String,
        extraHeaders: [(String, String)] = [],
        keepOpen: Bool
    ) {
        state.setStatus(status, at: recordIndex)
        var text = "HTTP/1.1 \(status) \(reason)\r\n"
        for (name, value) in extraHeaders {
            text += "\(name): \(value)\r\n"
        }
        text += "Content-Length: 0\r\n"
        if !keepOpen {
            text += "Connection: close\r\n"
        }
        text += "\r\n"
        let written = context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(string: text)))
        if keepOpen {
            mode = .discardingBody
        } else {
            mode = .closing
            written.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        }
    }

    // MARK: CONNECT

    private func openTunnel(to target: ProxyTarget, context: ChannelHandlerContext) {
        mode = .connectingTunnel
        let index = recordIndex
        ClientBootstrap(group: context.eventLoop)
            .connectTimeout(Self.connectTimeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelOption(.allowRemoteHalfClosure, value: true)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ProxyTunnelHandler())
                }
            }
            .connect(host: target.host, port: target.port)
            .assumeIsolated()
            .whenComplete { result in
                switch result {
                case .failure:
                    self.refuse(context: context, status: 502, reason: "Bad Gateway", keepOpen: false)
                case .success(let upstream):
                    self.tunnelConnected(upstream, recordIndex: index, context: context)
                }
            }
    }

    private func tunnelConnected(_ upstream: any Channel, recordIndex index: Int, context: ChannelHandlerContext) {
        guard context.channel.isActive, state.openUpstreamConnection(upstream),
            let upstreamEnd = try? upstream.pipeline.syncOperations.handler(type: ProxyTunnelHandler.self)
        else {
            upstream.close(promise: nil)
            return
        }
        state.setStatus(200, at: index)
        mode = .tunnel
        let established = "HTTP/1.1 200 Connection Established\r\n\r\n"
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(string: established)), promise: nil)

        // Hand the connection over: the tunnel end goes last, this handler leaves at once, and the decoder leaves
        // on the next loop tick, passing on the bytes that followed the CONNECT head (the parser stops at a
        // CONNECT, and its `.forwardBytes` strategy fires them down the pipeline) — to the tunnel end.
        let clientEnd = ProxyTunnelHandler()
        let pipeline = context.pipeline.syncOperations
        do {
            try pipeline.addHandler(clientEnd)
            clientEnd.join(upstreamEnd)
            let decoder = try pipeline.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            let channel = context.channel
            pipeline.removeHandler(context: context, promise: nil)
            pipeline.removeHandler(decoder, promise: nil)
            // The read this handler held back while connecting is now the tunnel's to issue.
            channel.read()
        } catch {
            context.close(promise: nil)
            upstream.close(promise: nil)
        }
    }

    // MARK: Absolute form

    private func forward(_ head: HTTPRequestHead, to target: ProxyTarget, context: ChannelHandlerContext) {
        mode = .forwarding
        isRequestComplete = false
        isBodyChunked = head.headers.contains(name: "Transfer-Encoding")
        pendingUpstreamBytes = [context.channel.allocator.buffer(string: Self.originHead(head, target: target))]
        ClientBootstrap(group: context.eventLoop)
            .connectTimeout(Self.connectTimeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ProxyResponseRelay())
                }
            }
            .connect(host: target.host, port: target.port)
            .assumeIsolated()
            .whenComplete { result in
                switch result {
                case .failure:
                    self.pendingUpstreamBytes = []
                    self.refuse(context: context, status: 502, reason: "Bad Gateway", keepOpen: false)
                case .success(let upstream):
                    self.originConnected(upstream, context: context)
                }
            }
    }

    private func originConnected(_ upstream: any Channel, context: ChannelHandlerContext) {
        guard context.channel.isActive, state.openUpstreamConnection(upstream),
            let relay = try? upstream.pipeline.syncOperations.handler(type: ProxyResponseRelay.self)
        else {
            upstream.close(promise: nil)
            return
        }
        self.relay = relay
        for buffer in pendingUpstreamBytes {
            relay.send(buffer)
        }
        pendingUpstreamBytes = []
        relay.flush()
        relay.attach(to: self)
        resumeReading(context: context)
    }

    /// The request head for the origin: origin-form target, the client's fields without the proxy's own and the
    /// hop-by-hop `Connection` / `Keep-Alive` (replaced by `Connection: close`, as each request gets a connection
    /// of its own).
    private static func originHead(_ head: HTTPRequestHead, target: ProxyTarget) -> String {
        let dropped: Set<String> = ["proxy-authorization", "proxy-connection", "connection", "keep-alive"]
        var text = "\(head.method.rawValue) \(target.originForm) HTTP/\(head.version.major).\(head.version.minor)\r\n"
        for field in head.headers where !dropped.contains(field.name.lowercased()) {
            text += "\(field.name): \(field.value)\r\n"
        }
        text += "Connection: close\r\n\r\n"
        return text
    }

    /// `buffer` as one chunk of a chunked body (the decoder took the client's chunk framing off).
    private static func chunk(_ buffer: ByteBuffer, allocator: ByteBufferAllocator) -> ByteBuffer {
        var framed = allocator.buffer(capacity: buffer.readableBytes + 16)
        framed.writeString(String(buffer.readableBytes, radix: 16) + "\r\n")
        framed.writeImmutableBuffer(buffer)
        framed.writeString("\r\n")
        return framed
    }

    private func sendUpstream(_ buffer: ByteBuffer) {
        if let relay {
            relay.send(buffer)
        } else {
            pendingUpstreamBytes.append(buffer)
        }
    }

    // MARK: Called by the relay

    /// Whether the client connection can take more of the origin's response.
    var canTakeResponseBytes: Bool {
        context?.channel.isWritable ?? false
    }

    func originSent(_ buffer: ByteBuffer) {
        guard let context else { return }
        if let status = statusSniffer.feed(buffer.readableBytesView) {
            state.setStatus(status, at: recordIndex)
        }
        context.write(wrapOutboundOut(buffer), promise: nil)
    }

    func originReadComplete() {
        context?.flush()
    }

    func originWritabilityChanged() {
        guard let context else { return }
        resumeReading(context: context)
    }

    /// The origin closed: once the client has every byte of the response, close the client connection too.
    func originClosed() {
        relay = nil
        guard let context else { return }
        mode = .closing
        let empty = context.channel.allocator.buffer(capacity: 0)
        context.writeAndFlush(wrapOutboundOut(empty)).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }

    // MARK: Connection events

    func read(context: ChannelHandlerContext) {
        switch mode {
        case .connectingTunnel:
            pendingRead = true
        case .forwarding where !isRequestComplete && !(relay?.isWritable ?? false):
            pendingRead = true
        default:
            context.read()
        }
    }

    private func resumeReading(context: ChannelHandlerContext) {
        guard pendingRead else { return }
        pendingRead = false
        read(context: context)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        relay?.resumeReading()
        context.fireChannelWritabilityChanged()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .inputClosed = event as? ChannelEvent {
            switch mode {
            case .forwarding where isRequestComplete:
                // The whole request is on its way; the response still comes back on this connection.
                break
            case .tunnel:
                break
            default:
                context.close(promise: nil)
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        relay?.close()
        relay = nil
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        switch mode {
        case .idle, .discardingBody:
            // A request the parser rejects gets a 400 before the connection closes.
            mode = .closing
            let text = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(string: text)))
                .assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        default:
            context.close(promise: nil)
        }
    }
}
