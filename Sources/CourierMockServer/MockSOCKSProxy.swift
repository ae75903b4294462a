import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// An in-process SOCKS5 proxy (RFC 1928) on the loopback interface, for testing a client's SOCKS support.
///
/// ```swift
/// let proxy = MockSOCKSProxy(requiredCredentials: (user: "u", password: "p"))
/// try await proxy.start()
/// defer { Task { try await proxy.shutdown() } }
/// // ... point the client at 127.0.0.1:proxy.port ...
/// #expect(proxy.requests.first?.reply == 0x00)
/// ```
///
/// It offers exactly one authentication method: "no authentication" (0x00), or with
/// ``init(requiredCredentials:)``'s credentials username/password (0x02, RFC 1929). A client that does not offer
/// it gets `05 FF`, wrong credentials get `01 01`, and the connection closes.
///
/// Only `CONNECT` is supported (other commands get reply 0x07), with IPv4, domain-name and IPv6 destinations (other
/// address types get 0x08). It only ever connects to the loopback interface: a destination other than `127.0.0.1`,
/// `::1` or the name `localhost` (taken as 127.0.0.1, never looked up) gets 0x02 without any connection attempt; a
/// destination that cannot be reached gets 0x05. A failure reply closes the connection. On success the reply
/// (`05 00 00 01`, the proxy's IPv4 end of the upstream connection and its port; `0.0.0.0:0` when that end is
/// IPv6) is followed by raw bytes spliced in both directions, starting with any the client sent right behind its
/// request. An end of input on one side half-closes the other; a close of either side closes both.
///
/// Messages may arrive split anywhere or several in one piece. The proxy runs on
/// ``MockServerEventLoops/group``; each upstream connection shares its client connection's event loop.
public final class MockSOCKSProxy: Sendable {
    private let credentials: (user: String, password: String)?
    private let state = ProxyState<SOCKSRequest>()
    private let listener = LoopbackListener()

    /// Creates a proxy; it does not listen until ``start()``.
    ///
    /// - Parameter requiredCredentials: When set, only username/password authentication (method 0x02, RFC 1929)
    ///   is offered, and the client must send exactly these (compared byte for byte as UTF-8); else only "no
    ///   authentication" (0x00) is offered.
    public init(requiredCredentials: (user: String, password: String)? = nil) {
        self.credentials = requiredCredentials
    }

    deinit {
        listener.closeNow()
        for channel in state.shutDown() {
            channel.close(promise: nil)
        }
    }

    // MARK: Lifecycle

    /// Listens on 127.0.0.1 on an ephemeral port; afterwards ``port`` is valid.
    ///
    /// - Throws: ``MockServerError/alreadyStarted`` when called twice or after ``shutdown()``, or the bind error.
    public func start() async throws {
        try await listener.start(makeBootstrap())
    }

    /// Closes the listening socket, every client connection and every upstream connection (tunnels included).
    /// Idempotent.
    public func shutdown() async throws {
        await listener.shutdown()
        await state.closeAll()
    }

    private func makeBootstrap() -> ServerBootstrap {
        let state = self.state
        let credentials = self.credentials
        return ServerBootstrap(group: MockServerEventLoops.group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            // A tunnel passes a client's half-close on to the target instead of tearing the connection down.
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    guard let id = state.openClientConnection(channel) else { throw MockServerError.shutDown }
                    channel.closeFuture.whenComplete { _ in state.closeClientConnection(id: id) }
                    try channel.pipeline.syncOperations.addHandler(
                        SOCKSConnectionHandler(state: state, credentials: credentials))
                }
            }
    }

    // MARK: Inspection

    /// The bound port; valid after ``start()`` (0 before).
    public var port: Int {
        listener.port
    }

    /// Every request the proxy answered, in the order of the answers: successful `CONNECT`s and refused requests
    /// (other commands included), each recorded just before its reply was sent. A request whose client left
    /// before the answer is not recorded, nor is a connection that ended during method selection or
    /// authentication.
    public var requests: [SOCKSRequest] {
        state.requests
    }

    /// The number of client connections accepted so far.
    public var connectionCount: Int {
        state.connectionCount
    }
}
