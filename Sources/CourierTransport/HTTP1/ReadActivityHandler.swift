import NIOCore

/// Reports every read from the socket, before TLS and HTTP decoding, so the request timeout measures how long
/// the connection stays silent: Apple documents `timeoutIntervalForRequest` as how long a task waits for
/// additional data to arrive, so every byte counts, also those of a head or a TLS record still incomplete.
///
/// It sits first in the pipeline and passes everything on unchanged.
final class ReadActivityHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let onRead: () -> Void

    /// Creates a handler that calls `onRead` (on the event loop) for every read.
    init(onRead: @escaping () -> Void) {
        self.onRead = onRead
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        onRead()
        context.fireChannelRead(data)
    }
}
