import NIOCore
import NIOHTTP1

/// On an HTTP/2 stream, sits between ``ConnectionHandler`` (which writes HTTP/1.1 response bytes) and NIOHTTP2's
/// HTTP/1 codec (which wants response parts): parses the bytes back into parts with an ``HTTP1ResponseParser``, so
/// every scripted behaviour of ``ResponseWriter`` — delays, throttling, informational heads, truncation — carries over
/// to HTTP/2 unchanged. Connection-specific fields (`Connection`, `Transfer-Encoding`, …) are dropped by the codec.
///
/// Closing the stream while a close-delimited body is being sent ends the response cleanly; closing it in the middle
/// of any other response resets the stream (a truncated body). Bytes that are not an HTTP/1.1 response reset the
/// stream with `INTERNAL_ERROR`.
final class HTTP1ResponseBytesToParts: ChannelDuplexHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = HTTPServerResponsePart

    private let stream: HTTP2StreamEndpoint
    private var parser = HTTP1ResponseParser()
    /// Set once the bytes failed to parse or the response was ended by closing: later writes fail.
    private var isStopped = false
    /// The completion of the latest write passed on.
    private var lastWrite: EventLoopFuture<Void>?

    init(stream: HTTP2StreamEndpoint) {
        self.stream = stream
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head(let head) = unwrapInboundIn(data) {
            parser.isHeadRequest = head.method == .HEAD
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard !isStopped else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        let parts: [HTTPServerResponsePart]
        do {
            parts = try parser.parse(unwrapOutboundIn(data))
        } catch {
            isStopped = true
            promise?.fail(error)
            stream.reset(.internalError)
            return
        }
        guard let last = parts.last else {
            // Nothing to send (bytes held back, or dropped after the response): done once what came before is.
            if let promise {
                afterPreviousWrites(context: context) { promise.succeed() }
            }
            return
        }
        for part in parts.dropLast() {
            context.write(wrapOutboundOut(part), promise: nil)
        }
        // Writes complete in order, so the last part's completion stands for the whole buffer.
        let written = context.eventLoop.makePromise(of: Void.self)
        context.write(wrapOutboundOut(last), promise: written)
        lastWrite = written.futureResult
        if let promise {
            written.futureResult.cascade(to: promise)
        }
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        if parser.isCloseDelimited && !isStopped {
            isStopped = true
            let ended = context.eventLoop.makePromise(of: Void.self)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: ended)
            lastWrite = ended.futureResult
        }
        // NIOHTTP2 holds DATA frames until the connection flushes, and a reset (which closing an unfinished stream
        // sends) drops the ones still held: so close only once everything written has gone out.
        afterPreviousWrites(context: context) { context.close(mode: mode, promise: promise) }
    }

    /// Runs `body` once the last write has completed (successfully or not), or now if there is none pending.
    private func afterPreviousWrites(context: ChannelHandlerContext, _ body: @escaping () -> Void) {
        guard let lastWrite else {
            body()
            return
        }
        lastWrite.assumeIsolated().whenComplete { _ in body() }
    }
}
