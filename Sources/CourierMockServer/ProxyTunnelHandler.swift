import NIOCore

/// One end of a `CONNECT` tunnel: everything its channel reads is written, unchanged, to the partner's channel.
///
/// A pair joins the client's channel and the origin's; both run on the same event loop (the upstream connection
/// is made on the client channel's loop), so the two handlers call each other directly. Reading pauses while the
/// partner cannot take more bytes (backpressure), an end of input on one side half-closes the other side's
/// output, and a close of either side closes the other.
final class ProxyTunnelHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var context: ChannelHandlerContext?
    private var partner: ProxyTunnelHandler?
    /// A read the channel asked for while the partner could not take more bytes (or was not joined yet).
    private var pendingRead = false
    private var isInputClosed = false
    /// Set once the partner's peer ended its input: nothing more is written to this channel.
    private var isOutputClosing = false
    /// Set once the half-close of this channel's output completed (after the bytes written before it).
    private var isOutputClosed = false

    /// Joins `self` and `other`; both must be in their pipelines, on the same event loop.
    func join(_ other: ProxyTunnelHandler) {
        partner = other
        other.partner = self
        resumeReadingIfPossible()
        other.resumeReadingIfPossible()
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        partner = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // Flushed at once rather than at read-complete: the bytes that followed a CONNECT head arrive from the
        // HTTP decoder as it leaves the pipeline, with no read-complete after them.
        partner?.writeAndFlush(unwrapInboundIn(data))
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .inputClosed = event as? ChannelEvent {
            isInputClosed = true
            partner?.closeOutput()
            closeIfBothHalvesClosed()
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        // Break the reference cycle and take the other side down with us.
        let partner = self.partner
        self.partner = nil
        partner?.partner = nil
        partner?.close()
        context.fireChannelInactive()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            partner?.resumeReadingIfPossible()
        }
        context.fireChannelWritabilityChanged()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A reset or any other failure ends the tunnel; channelInactive closes the partner.
        context.close(promise: nil)
    }

    func read(context: ChannelHandlerContext) {
        if let partner, partner.isWritable {
            context.read()
        } else {
            pendingRead = true
        }
    }

    // MARK: Called by the partner

    private var isWritable: Bool {
        context?.channel.isWritable ?? false
    }

    private func writeAndFlush(_ buffer: ByteBuffer) {
        guard let context, !isOutputClosing else { return }
        context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
    }

    private func resumeReadingIfPossible() {
        guard pendingRead, let context, let partner, partner.isWritable else { return }
        pendingRead = false
        context.read()
    }

    /// The partner's peer sent its last byte: pass the end on, keeping the other direction open.
    private func closeOutput() {
        guard let context, !isOutputClosing else { return }
        isOutputClosing = true
        context.flush()
        // NIO shuts the output down only after the bytes already written are sent.
        context.close(mode: .output).assumeIsolated().whenComplete { result in
            switch result {
            case .success:
                self.isOutputClosed = true
                self.closeIfBothHalvesClosed()
            case .failure:
                // Half-closing is not always possible; a full close is the next best signal.
                context.close(promise: nil)
            }
        }
    }

    private func closeIfBothHalvesClosed() {
        guard isInputClosed, isOutputClosed, let context else { return }
        context.close(promise: nil)
    }

    /// Closes this channel once what was written to it is sent (a plain close would drop unsent bytes).
    private func close() {
        guard let context else { return }
        let empty = context.channel.allocator.buffer(capacity: 0)
        context.writeAndFlush(wrapOutboundOut(empty)).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }
}
