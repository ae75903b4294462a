import NIOCore
import NIOPosix

/// Serves one client connection of a ``MockSOCKSProxy``: method selection, the optional username/password
/// exchange and one request; a `CONNECT` to a loopback target that succeeds hands the connection to a pair of
/// ``ProxyTunnelHandler``s, anything else is answered with a failure reply and the connection closes.
final class SOCKSConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private enum Phase {
        case greeting
        case credentials
        case request
        /// Connecting to the target; reading is paused, and bytes already read wait in `buffer` for the tunnel.
        case connecting
        /// The tunnel is up and this handler is leaving the pipeline.
        case tunnel
        /// The connection closes after a reply (or at once); whatever else arrives is ignored.
        case closing
    }

    /// Reply codes (RFC 1928, section 6).
    private enum Reply {
        static let succeeded: UInt8 = 0x00
        static let notAllowed: UInt8 = 0x02
        static let refused: UInt8 = 0x05
        static let commandNotSupported: UInt8 = 0x07
        static let addressTypeNotSupported: UInt8 = 0x08
    }

    private static let noAuthentication: UInt8 = 0x00
    private static let usernamePassword: UInt8 = 0x02
    private static let noAcceptableMethod: UInt8 = 0xFF

    /// The connection attempt to a target gives up after this long (loopback answers at once, but a target that
    /// drops packets must not keep the client waiting forever).
    private static let connectTimeout = TimeAmount.seconds(5)

    /// The most bytes held before the tunnel is up. A handshake message is at most 513 bytes and reading pauses
    /// while connecting, so only a client that keeps sending after a refusal or floods its first read gets here.
    private static let maximumBufferedBytes = 1 << 20

    private let state: ProxyState<SOCKSRequest>
    private let credentials: (user: [UInt8], password: [UInt8])?
    private var phase = Phase.greeting
    /// Bytes received and not yet consumed by the handshake.
    private var buffer = ByteBuffer()
    /// The user name that authenticated, for the record.
    private var user: String?
    /// The client ended its input while the proxy was connecting; the tunnel passes the end on to the target.
    private var isInputClosed = false

    init(state: ProxyState<SOCKSRequest>, credentials: (user: String, password: String)?) {
        self.state = state
        self.credentials = credentials.map { (user: Array($0.user.utf8), password: Array($0.password.utf8)) }
    }

    // MARK: Handshake

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch phase {
        case .tunnel, .closing:
            return
        case .greeting, .credentials, .request, .connecting:
            break
        }
        var bytes = unwrapInboundIn(data)
        buffer.writeBuffer(&bytes)
        guard buffer.readableBytes <= Self.maximumBufferedBytes else {
            closeNow(context: context)
            return
        }
        proceed(context: context)
    }

    /// Consumes every complete message in `buffer`: a client may send its greeting, credentials and request (and
    /// even tunnel bytes) without waiting for the answers.
    private func proceed(context: ChannelHandlerContext) {
        while true {
            switch phase {
            case .greeting:
                switch SOCKSWire.readGreeting(from: &buffer) {
                case .incomplete:
                    return
                case .malformed:
                    closeNow(context: context)
                    return
                case .complete(let methods):
                    let method = credentials == nil ? Self.noAuthentication : Self.usernamePassword
                    guard methods.contains(method) else {
                        send([SOCKSWire.version, Self.noAcceptableMethod], thenClose: true, context: context)
                        return
                    }
                    send([SOCKSWire.version, method], thenClose: false, context: context)
                    phase = credentials == nil ? .request : .credentials
                }
            case .credentials:
                switch SOCKSWire.readCredentials(from: &buffer) {
                case .incomplete:
                    return
                case .malformed:
                    // RFC 1929: any status other than 0x00 means failure, and the connection closes.
                    send([SOCKSWire.credentialsVersion, 0x01], thenClose: true, context: context)
                    return
                case .complete(let offered):
                    guard let credentials, offered.user == credentials.user, offered.password == credentials.password
                    else {
                        send([SOCKSWire.credentialsVersion, 0x01], thenClose: true, context: context)
                        return
                    }
                    user = String(decoding: offered.user, as: UTF8.self)
                    send([SOCKSWire.credentialsVersion, 0x00], thenClose: false, context: context)
                    phase = .request
                }
            case .request:
                switch SOCKSWire.readRequest(from: &buffer) {
                case .incomplete:
                    return
                case .malformed:
                    closeNow(context: context)
                case .complete(let request):
                    handle(request, context: context)
                }
                return
            case .connecting, .tunnel, .closing:
                return
            }
        }
    }

    private func handle(_ request: SOCKSWire.Request, context: ChannelHandlerContext) {
        let host: String
        let target: String
        let addressType: String
        switch request.address {
        case .ipv4(let bytes):
            host = bytes.map(String.init).joined(separator: ".")
            target = "\(host):\(request.port)"
            addressType = "ipv4"
        case .ipv6(let bytes):
            host = (try? SocketAddress(packedIPAddress: ByteBuffer(bytes: bytes), port: 0))?.ipAddress ?? ""
            target = "[\(host)]:\(request.port)"
            addressType = "ipv6"
        case .domain(let bytes):
            host = String(decoding: bytes, as: UTF8.self)
            target = "\(host):\(request.port)"
            addressType = "domain"
        case .unsupported(let type):
            let hex = String(type, radix: 16)
            let record = SOCKSRequest(
                target: "", addressType: "0x" + (hex.count < 2 ? "0" + hex : hex), user: user,
                reply: Reply.addressTypeNotSupported)
            refuse(record, context: context)
            return
        }
        var record = SOCKSRequest(target: target, addressType: addressType, user: user, reply: Reply.succeeded)
        guard request.command == SOCKSWire.connectCommand else {
            record.reply = Reply.commandNotSupported
            refuse(record, context: context)
            return
        }
        // Checked before any connection attempt (or name lookup), so that no test can make the proxy reach beyond
        // this machine.
        guard ProxyTarget(host: host, port: request.port).isLoopback else {
            record.reply = Reply.notAllowed
            refuse(record, context: context)
            return
        }
        // `localhost` is not looked up: it always means 127.0.0.1 here, whatever the resolver says.
        let connectHost = host.lowercased() == "localhost" ? "127.0.0.1" : host
        guard let address = try? SocketAddress(ipAddress: connectHost, port: request.port) else {
            record.reply = Reply.refused
            refuse(record, context: context)
            return
        }
        connect(to: address, record: record, context: context)
    }

    // MARK: Replies

    private func send(_ bytes: [UInt8], thenClose: Bool, context: ChannelHandlerContext) {
        let written = context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: bytes)))
        if thenClose {
            phase = .closing
            written.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        }
    }

    private func refuse(_ record: SOCKSRequest, context: ChannelHandlerContext) {
        // Recorded before the reply is written, so that a client that has read the reply finds the record.
        state.record(record)
        send(SOCKSWire.reply(record.reply), thenClose: true, context: context)
    }

    private func closeNow(context: ChannelHandlerContext) {
        phase = .closing
        context.close(promise: nil)
    }

    // MARK: CONNECT

    private func connect(to address: SocketAddress, record: SOCKSRequest, context: ChannelHandlerContext) {
        phase = .connecting
        ClientBootstrap(group: context.eventLoop)
            .connectTimeout(Self.connectTimeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelOption(.allowRemoteHalfClosure, value: true)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ProxyTunnelHandler())
                }
            }
            .connect(to: address)
            .assumeIsolated()
            .whenComplete { result in
                switch result {
                case .failure:
                    guard context.channel.isActive else { return }
                    var refused = record
                    refused.reply = Reply.refused
                    self.refuse(refused, context: context)
                case .success(let upstream):
                    self.connected(upstream, record: record, context: context)
                }
            }
    }

    private func connected(_ upstream: any Channel, record: SOCKSRequest, context: ChannelHandlerContext) {
        guard context.channel.isActive, state.openUpstreamConnection(upstream),
            let upstreamEnd = try? upstream.pipeline.syncOperations.handler(type: ProxyTunnelHandler.self)
        else {
            upstream.close(promise: nil)
            return
        }
        state.record(record)
        phase = .tunnel
        send(SOCKSWire.reply(Reply.succeeded, bound: upstream.localAddress), thenClose: false, context: context)

        // Hand the connection over: the tunnel end goes after this handler, gets the bytes that followed the
        // request (and the client's end of input, if it came while connecting), and this handler leaves.
        let clientEnd = ProxyTunnelHandler()
        let pipeline = context.pipeline.syncOperations
        do {
            try pipeline.addHandler(clientEnd)
            clientEnd.join(upstreamEnd)
            if buffer.readableBytes > 0 {
                context.fireChannelRead(wrapInboundOut(buffer))
            }
            buffer = ByteBuffer()
            if isInputClosed {
                context.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
            }
            let channel = context.channel
            pipeline.removeHandler(context: context, promise: nil)
            // The read this handler held back while connecting is now the tunnel's to issue.
            if !isInputClosed {
                channel.read()
            }
        } catch {
            context.close(promise: nil)
            upstream.close(promise: nil)
        }
    }

    // MARK: Flow control and the end of the connection

    func read(context: ChannelHandlerContext) {
        // While connecting the read is dropped: nothing more should be buffered, and the tunnel issues a read once
        // it is up.
        if case .connecting = phase { return }
        context.read()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .inputClosed = event as? ChannelEvent {
            switch phase {
            case .connecting:
                // Held back until the tunnel is up, so that it follows the bytes already read.
                isInputClosed = true
                return
            case .tunnel:
                break
            case .greeting, .credentials, .request, .closing:
                // The handshake can no longer complete.
                closeNow(context: context)
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        closeNow(context: context)
    }
}
