import CourierHTTP
import NIOCore

/// Opens a connection through a SOCKS5 proxy (RFC 1928) before anything else happens on it, with username and
/// password authentication (RFC 1929) when credentials are given: like ``TunnelConnectHandler`` it holds back
/// `channelActive` from the handlers after it, so that HTTP — or TLS to the origin — starts only once the proxy has
/// connected.
///
/// Host names are sent to the proxy to resolve (as curl's `socks5h://`: the name never goes to the local resolver,
/// which may not even see the proxy's network); IP literals are sent as addresses. Any refusal fails the connection:
/// `cannotConnectToHost` naming the proxy's reason, or `userAuthenticationRequired` when the proxy wants credentials
/// it did not get or refuses the ones given.
final class SOCKSConnectHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private enum State {
        case connecting
        case awaitingMethod
        case awaitingAuthentication
        case awaitingReply
        case open
        case failed
    }

    private let host: String
    private let port: Int
    private let user: String?
    private let password: String?
    private var state = State.connecting
    private var buffer: [UInt8] = []

    init(host: String, port: Int, user: String?, password: String?) {
        self.host = host
        self.port = port
        self.user = user
        self.password = password
    }

    func channelActive(context: ChannelHandlerContext) {
        // Methods offered: "no authentication", and "username/password" when there are credentials.
        let methods: [UInt8] = user == nil ? [0x00] : [0x00, 0x02]
        state = .awaitingMethod
        write([0x05, UInt8(methods.count)] + methods, context)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .open = state { return context.fireChannelRead(data) }
        var input = unwrapInboundIn(data)
        buffer += input.readBytes(length: input.readableBytes) ?? []
        while step(context) {}
    }

    /// Handles one complete message of the proxy's, if it arrived; `false` when more bytes are needed.
    private func step(_ context: ChannelHandlerContext) -> Bool {
        switch state {
        case .awaitingMethod:
            guard buffer.count >= 2 else { return false }
            let method = buffer[1]
            buffer.removeFirst(2)
            guard method != 0xFF else {
                fail(
                    context,
                    .urlError(.userAuthenticationRequired, "the SOCKS proxy accepts none of our ways to authenticate"))
                return false
            }
            if method == 0x02, let user {
                let name = Array(user.utf8.prefix(255))
                let secret = Array((password ?? "").utf8.prefix(255))
                state = .awaitingAuthentication
                write([0x01, UInt8(name.count)] + name + [UInt8(secret.count)] + secret, context)
            } else if method == 0x00 {
                sendConnect(context)
            } else {
                fail(
                    context,
                    .urlError(
                        .userAuthenticationRequired,
                        "the SOCKS proxy asks for an authentication method Courier does not speak"))
            }
            return true
        case .awaitingAuthentication:
            guard buffer.count >= 2 else { return false }
            let status = buffer[1]
            buffer.removeFirst(2)
            guard status == 0x00 else {
                fail(
                    context,
                    .urlError(.userAuthenticationRequired, "the SOCKS proxy refused the user name and password"))
                return false
            }
            sendConnect(context)
            return true
        case .awaitingReply:
            guard buffer.count >= 5 else { return false }
            let addressLength: Int
            switch buffer[3] {
            case 0x01: addressLength = 4
            case 0x04: addressLength = 16
            case 0x03: addressLength = 1 + Int(buffer[4])
            default:
                fail(context, .cannotConnectToHost("the SOCKS proxy's reply is malformed"))
                return false
            }
            let length = 4 + addressLength + 2
            guard buffer.count >= length else { return false }
            let reply = buffer[1]
            guard buffer[0] == 0x05, reply == 0x00 else {
                fail(
                    context,
                    .cannotConnectToHost("the SOCKS proxy could not connect to \(host):\(port): \(Self.reason(reply))"))
                return false
            }
            buffer.removeFirst(length)
            state = .open
            context.fireChannelActive()
            if !buffer.isEmpty {
                let rest = buffer
                buffer = []
                context.fireChannelRead(wrapInboundOut(context.channel.allocator.buffer(bytes: rest)))
            }
            return false
        case .connecting, .open, .failed:
            return false
        }
    }

    private func sendConnect(_ context: ChannelHandlerContext) {
        var request: [UInt8] = [0x05, 0x01, 0x00]
        switch try? SocketAddress(ipAddress: host, port: port) {
        case .v4(let v4)?:
            request += [0x01] + withUnsafeBytes(of: v4.address.sin_addr) { Array($0) }
        case .v6(let v6)?:
            request += [0x04] + withUnsafeBytes(of: v6.address.sin6_addr) { Array($0) }
        default:
            let name = Array(host.utf8.prefix(255))
            request += [0x03, UInt8(name.count)] + name
        }
        request += [UInt8(port >> 8), UInt8(port & 0xFF)]
        state = .awaitingReply
        write(request, context)
    }

    private func write(_ bytes: [UInt8], _ context: ChannelHandlerContext) {
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: bytes)), promise: nil)
    }

    private func fail(_ context: ChannelHandlerContext, _ error: TransferError) {
        state = .failed
        buffer = []
        context.fireErrorCaught(error)
    }

    /// RFC 1928 §6's reply codes.
    private static func reason(_ reply: UInt8) -> String {
        switch reply {
        case 0x01: return "general failure"
        case 0x02: return "connection not allowed by its rules"
        case 0x03: return "network unreachable"
        case 0x04: return "host unreachable"
        case 0x05: return "connection refused"
        case 0x06: return "TTL expired"
        case 0x07: return "command not supported"
        case 0x08: return "address type not supported"
        default: return "reply \(reply)"
        }
    }
}
