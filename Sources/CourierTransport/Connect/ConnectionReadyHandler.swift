import NIOCore
import NIOSSL
import NIOTLS

/// Completes a promise when a new connection can carry requests: when TCP is up, or, for TLS, when the
/// handshake is done, with the protocol ALPN chose (`nil` without TLS or without agreement). Connection set-up
/// failures so surface as connect errors, not as request errors.
final class ConnectionReadyHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    private let promise: EventLoopPromise<String?>
    private let waitsForTLS: Bool
    private var done = false

    init(promise: EventLoopPromise<String?>, waitsForTLS: Bool) {
        self.promise = promise
        self.waitsForTLS = waitsForTLS
    }

    func channelActive(context: ChannelHandlerContext) {
        context.fireChannelActive()
        if !waitsForTLS { succeed(negotiatedProtocol: nil, context: context) }
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if !waitsForTLS && context.channel.isActive { succeed(negotiatedProtocol: nil, context: context) }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let tls = event as? TLSUserEvent, case .handshakeCompleted(let negotiatedProtocol) = tls {
            succeed(negotiatedProtocol: negotiatedProtocol, context: context)
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

    private func succeed(negotiatedProtocol: String?, context: ChannelHandlerContext) {
        guard !done else { return }
        done = true
        promise.succeed(negotiatedProtocol)
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }
}
