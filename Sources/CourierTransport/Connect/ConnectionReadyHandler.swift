import NIOCore
import NIOSSL
import NIOTLS

/// Completes a promise when a new connection can carry requests: when TCP is up, or, for TLS, when the
/// handshake is done. Connection set-up failures so surface as connect errors, not as request errors.
final class ConnectionReadyHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    private let promise: EventLoopPromise<Void>
    private let waitsForTLS: Bool
    private var done = false

    init(promise: EventLoopPromise<Void>, waitsForTLS: Bool) {
        self.promise = promise
        self.waitsForTLS = waitsForTLS
    }

    func channelActive(context: ChannelHandlerContext) {
        context.fireChannelActive()
        if !waitsForTLS { succeed(context: context) }
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if !waitsForTLS && context.channel.isActive { succeed(context: context) }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let tls = event as? TLSUserEvent, case .handshakeCompleted = tls {
            succeed(context: context)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if !done {
            done = true
            promise.fail(error)
            context.close(promise: nil)
            return
        }
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !done {
            done = true
            promise.fail(ChannelError.eof)
        }
        context.fireChannelInactive()
    }

    private func succeed(context: ChannelHandlerContext) {
        guard !done else { return }
        done = true
        promise.succeed(())
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }
}
