import NIOCore
import NIOHTTP2

/// Holds back the flushes of an HTTP/2 connection's streams until the event loop has run what is already queued
/// on it, so that the requests of many streams opened in one turn of the loop leave in one TLS write.
///
/// Each request a task starts reaches the connection as a job of its own on the event loop, and each stream flushes
/// its request when written: without this handler, 64 requests in flight cost 64 `write(2)`s and 64 TLS records
/// even when they were queued together. NIOHTTP2 already holds a stream's flush back while the connection is
/// reading; this does the same for the jobs that start streams. A flush held back runs as a job queued behind the
/// ones waiting, in the same turn of the loop, without sleeping in between; closing the connection flushes first.
///
/// It sits just behind NIOHTTP2's handler, so that every flush and close from the connection monitor and the stream
/// multiplexer (which flushes the connection when a stream flushes, a stream's window update included) passes
/// through it. Frames are written at once; only the flush waits, so NIOHTTP2 counts a stream as open as soon as its
/// request is written. What NIOHTTP2's handler sends by itself (acknowledgements, the connection's window updates)
/// it flushes itself, without passing here.
final class HTTP2FlushCoalescer: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    /// A flush is queued on the event loop and has not run yet.
    private var isFlushQueued = false

    func flush(context: ChannelHandlerContext) {
        guard !isFlushQueued else { return }
        isFlushQueued = true
        context.eventLoop.assumeIsolated().execute {
            self.flushNow(context: context)
        }
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        flushNow(context: context)
        context.close(mode: mode, promise: promise)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        flushNow(context: context)
    }

    private func flushNow(context: ChannelHandlerContext) {
        guard isFlushQueued else { return }
        isFlushQueued = false
        context.flush()
    }
}
