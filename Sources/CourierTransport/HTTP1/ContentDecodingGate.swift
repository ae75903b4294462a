import CourierHTTP
import NIOCore
import NIOHTTP1
import NIOHTTPCompression

/// Adds NIO's response decompressor to the pipeline the first time a response arrives gzip- or
/// deflate-encoded, so connections that never see an encoded body do not pay for a decompressor looking at
/// every part.
final class ContentDecodingGate: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias InboundOut = HTTPClientResponsePart

    private var installed = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if !installed, case .head(let head) = unwrapInboundIn(data),
            ContentCoding.isDecodedAutomatically(head.headers[canonicalForm: "Content-Encoding"].map(String.init))
        {
            do {
                // Right after this gate: the head fired below goes through the decompressor first, and so does
                // everything after it on this connection.
                try context.pipeline.syncOperations.addHandler(
                    NIOHTTPResponseDecompressor(limit: .none),
                    position: .after(self)
                )
                installed = true
            } catch {
                context.fireErrorCaught(error)
                return
            }
        }
        context.fireChannelRead(data)
    }

}
