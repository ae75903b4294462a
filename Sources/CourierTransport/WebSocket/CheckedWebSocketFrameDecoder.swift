import CourierHTTP
import NIOCore
import NIOWebSocket

/// NIO's frame decoder, with ``WebSocketFrameHeader``'s checks first. NIO reports a 64-bit length whose most
/// significant bit is set, and a control frame longer than the frame limit, as a frame too large (1009), where
/// RFC 6455 makes them protocol errors (1002). NIO's decoder consumes a header as it parses it, so each frame's header
/// is looked at, without consuming it, before NIO's decoder takes the frame's first byte.
final class CheckedWebSocketFrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = WebSocketFrame

    private let frames: WebSocketFrameDecoder
    /// Whether the next byte is a frame's first (NIO's decoder has not started on the frame).
    private var atFrameStart = true

    init(maxFrameSize: Int) {
        frames = WebSocketFrameDecoder(maxFrameSize: maxFrameSize)
    }

    func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        if atFrameStart {
            let header = buffer.getBytes(at: buffer.readerIndex, length: min(buffer.readableBytes, 10)) ?? []
            switch WebSocketFrameHeader.check(header) {
            case .incomplete:
                return .needMoreData
            case .violation(let closeCode, let reason):
                throw WebSocketFrameHeaderViolation(closeCode: closeCode, reason: reason)
            case .valid:
                break
            }
        }
        let state = try frames.decode(context: context, buffer: &buffer)
        // NIO's decoder answers `.continue` once it passed a whole frame on, `.needMoreData` inside one (it has read
        // at least the two bytes checked above).
        atFrameStart = state == .continue
        return state
    }
}

/// A frame header that breaks RFC 6455 (see ``WebSocketFrameHeader``): the connection fails with `closeCode`.
struct WebSocketFrameHeaderViolation: Error {
    var closeCode: UInt16
    var reason: String
}
