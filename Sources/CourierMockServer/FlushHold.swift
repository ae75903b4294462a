import NIOCore

/// Holds back the flushes that pass it until it is removed, then flushes once, so that what was written meanwhile
/// leaves in one write and the peer reads it at once. ``ServerPipeline`` puts it beneath NIOHTTP2's handler, which
/// flushes its SETTINGS as soon as it is added, to send a scripted GOAWAY in the same write
/// (``MockServer/goAwayWithSettings(onNext:errorCode:)``).
final class FlushHold: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = IOData

    private var flushHeld = false

    func flush(context: ChannelHandlerContext) {
        flushHeld = true
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        if flushHeld { context.flush() }
    }
}
