import NIOConcurrencyHelpers
import NIOCore

/// A request that takes its connection over when the server switches protocols (`101`), as a WebSocket handshake
/// does. Such a request always gets a connection of its own, offered only `http/1.1` by ALPN; on `101` the
/// transport takes the HTTP handlers off it, takes it out of the pool, and leaves it here for the request's owner.
public final class ConnectionUpgrade: Sendable {
    private struct State {
        var connection: UpgradedConnection?
        var waiter: (@Sendable () -> Void)?
    }

    private let state = NIOLockedValueBox(State())

    /// A new upgrade slot, for one request.
    public init() {}

    /// Called by the transport, on the connection's event loop, before the exchange finishes.
    func deliver(_ upgraded: UpgradedConnection) {
        let waiter: (@Sendable () -> Void)? = state.withLockedValue { state in
            state.connection = upgraded
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?()
    }

    /// Runs `body` once the connection is here: at once if it is, else when the transport leaves it (which it does
    /// right after delivering the `101` head, so an owner that saw that head waits only for the rest of it).
    public func whenFilled(_ body: @escaping @Sendable () -> Void) {
        let filled: Bool = state.withLockedValue { state in
            if state.connection != nil { return true }
            state.waiter = body
            return false
        }
        if filled { body() }
    }

    /// Closes the connection now if it is here and nobody took it, or when the transport leaves it, for an owner that
    /// will never take it (its task ended: otherwise nothing would ever close it, since the pool let go of it at the
    /// switch and no handler reads it). Weakly: the slot holds its waiter, and a slot never filled (the server did not
    /// switch) must not keep itself alive; the transport holds the slot until it fills it.
    public func closeWhatIsLeft() {
        whenFilled { [weak self] in self?.take()?.close() }
    }

    /// The connection the server switched, once; `nil` when it never did (another answer, or a failure).
    public func take() -> UpgradedConnection? {
        state.withLockedValue { state in
            defer { state.connection = nil }
            return state.connection
        }
    }
}

/// A connection after `101 Switching Protocols`: no HTTP handler is left on it, and it reads nothing until its new
/// owner installed its own handlers and called ``start(_:)``. Bytes that came right behind the `101` head are kept.
public final class UpgradedConnection: Sendable {
    /// The channel (TCP, or TLS over TCP).
    public let channel: any Channel
    private let buffer: NIOLoopBound<UpgradeBuffer>

    init(channel: any Channel, buffer: UpgradeBuffer) {
        self.channel = channel
        self.buffer = NIOLoopBound(buffer, eventLoop: channel.eventLoop)
    }

    /// Installs the new protocol's handlers with `configure` (on the event loop, at the end of the pipeline) and
    /// passes them the bytes already received; reading then goes on. If `configure` throws — as it does when the
    /// server closed the connection before its new owner got to it: NIO tears the pipeline of a closed channel down
    /// and refuses its options — the connection closes and `failed` runs (on the event loop) with the error: the
    /// owner's handlers never joined the pipeline, so nothing else would ever tell it the connection is gone.
    public func start(
        _ configure: @escaping @Sendable (ChannelPipeline.SynchronousOperations) throws -> Void,
        failed: @escaping @Sendable (any Error) -> Void
    ) {
        let channel = self.channel
        let buffer = self.buffer
        channel.eventLoop.execute {
            do {
                try configure(channel.pipeline.syncOperations)
                buffer.value.release()
            } catch {
                channel.close(promise: nil)
                failed(error)
            }
        }
    }

    /// Closes the connection without starting it.
    public func close() {
        channel.close(promise: nil)
    }
}

/// Holds what arrives on an upgraded connection, and its reads, until the new protocol's handlers are in place.
final class UpgradeBuffer: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = Never

    private var held: [ByteBuffer] = []
    private var inputClosed = false
    private var inactive = false
    private var context: ChannelHandlerContext?

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        held.append(unwrapInboundIn(data))
    }

    func read(context: ChannelHandlerContext) {
        // Held back: nothing is read until the new protocol can take it.
    }

    func channelInactive(context: ChannelHandlerContext) {
        inactive = true
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .inputClosed = event as? ChannelEvent {
            inputClosed = true
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// Passes on what was held and steps out of the way.
    func release() {
        guard let context else { return }
        let held = self.held
        self.held = []
        for buffer in held { context.fireChannelRead(wrapInboundOut(buffer)) }
        if !held.isEmpty { context.fireChannelReadComplete() }
        if inputClosed { context.fireUserInboundEventTriggered(ChannelEvent.inputClosed) }
        if inactive { context.fireChannelInactive() }
        let channel = context.channel
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        // Reads were held back (with auto-read on, the channel asked once and waits): ask again.
        if channel.isActive { channel.read() }
    }
}
