import NIOCore

/// The upstream end of a request a ``MockProxy`` forwards in absolute form: sends the request bytes it is given to
/// the origin and hands every byte of the origin's response to the ``ProxyConnectionHandler`` that owns it.
/// Both run on the same event loop. Reading from the origin pauses while the client cannot take more bytes.
final class ProxyResponseRelay: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var context: ChannelHandlerContext?
    private var owner: ProxyConnectionHandler?
    private var pendingRead = false

    /// Starts relaying to `owner` (until then reading from the origin waits).
    func attach(to owner: ProxyConnectionHandler) {
        self.owner = owner
        resumeReading()
    }

    /// Writes request bytes to the origin (flushed by ``flush()``).
    func send(_ buffer: ByteBuffer) {
        context?.write(wrapOutboundOut(buffer), promise: nil)
    }

    func flush() {
        context?.flush()
    }

    /// Reads again if a read waited for the client to drain.
    func resumeReading() {
        guard pendingRead, let context, owner?.canTakeResponseBytes == true else { return }
        pendingRead = false
        context.read()
    }

    func close() {
        context?.close(promise: nil)
    }

    var isWritable: Bool {
        context?.channel.isWritable ?? false
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        owner = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        owner?.originSent(unwrapInboundIn(data))
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        owner?.originReadComplete()
        context.fireChannelReadComplete()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        owner?.originWritabilityChanged()
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        let owner = self.owner
        self.owner = nil
        owner?.originClosed()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    func read(context: ChannelHandlerContext) {
        if owner?.canTakeResponseBytes == true {
            context.read()
        } else {
            pendingRead = true
        }
    }
}
