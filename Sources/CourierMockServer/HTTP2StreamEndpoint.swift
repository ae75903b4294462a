import NIOCore
import NIOHTTP2

/// The first handler of an HTTP/2 stream channel's pipeline, beneath NIOHTTP2's HTTP/1 codec: records the request's
/// header fields as they arrived (the codec adds fields of its own) and writes frames that bypass the HTTP/1
/// translation — resets and scripted misbehaviour.
///
/// Lives on the connection's event loop; all methods must be called there.
final class HTTP2StreamEndpoint: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias InboundOut = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    /// The stream's id.
    let streamID: Int
    /// The connection the stream belongs to.
    let connection: HTTP2ConnectionHandler
    /// The request's header fields: the regular ones as received, after a `host` field carrying `:authority` when
    /// the client sent no `host`. `nil` until the request's HEADERS frame arrives.
    private(set) var requestFields: [(name: String, value: String)]?
    private var context: ChannelHandlerContext?

    init(streamID: Int, connection: HTTP2ConnectionHandler) {
        self.streamID = streamID
        self.connection = connection
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if requestFields == nil, case .headers(let headers) = unwrapInboundIn(data) {
            var authority: String?
            var fields: [(name: String, value: String)] = []
            for (name, value, _) in headers.headers {
                if name == ":authority" {
                    authority = value
                } else if !name.hasPrefix(":") {
                    fields.append((name: name, value: value))
                }
            }
            if let authority, !fields.contains(where: { $0.name == "host" }) {
                fields.insert((name: "host", value: authority), at: 0)
            }
            requestFields = fields
        }
        context.fireChannelRead(data)
    }

    /// Writes and flushes `payload` on the stream, beneath the HTTP/1 codec.
    func write(_ payload: HTTP2Frame.FramePayload) {
        context?.writeAndFlush(wrapOutboundOut(payload), promise: nil)
    }

    /// Resets the stream: `RST_STREAM` with `code`. The stream channel closes once the reset is sent.
    func reset(_ code: HTTP2ErrorCode) {
        write(.rstStream(code))
    }
}
