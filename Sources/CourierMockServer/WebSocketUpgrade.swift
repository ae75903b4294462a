import NIOCore
import NIOHTTP1
import NIOWebSocket

/// Hands an HTTP/1.1 connection over to WebSocket after a successful opening handshake.
enum WebSocketUpgrade {
    /// Writes the `101` head, then replaces the HTTP handlers with NIO's frame decoder and `session`: the
    /// ``ConnectionHandler`` (whose `context` this is) leaves at once, the HTTP decoder on the next loop tick, passing
    /// on the bytes that followed the request to the frame decoder.
    static func switchProtocols(context: ChannelHandlerContext, head: String, session: WebSocketSession) {
        context.writeAndFlush(NIOAny(context.channel.allocator.buffer(string: head)), promise: nil)
        let pipeline = context.pipeline.syncOperations
        do {
            let frameDecoder = WebSocketFrameDecoder(maxFrameSize: WebSocketMessageAssembler.maximumMessageSize)
            try pipeline.addHandler(ByteToMessageHandler(frameDecoder))
            try pipeline.addHandler(session)
            let httpDecoder = try pipeline.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            pipeline.removeHandler(context: context, promise: nil)
            pipeline.removeHandler(httpDecoder, promise: nil)
            session.start()
        } catch {
            context.close(promise: nil)
        }
    }
}
