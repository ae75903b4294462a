import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix

/// An in-process HTTP/1.1 forward proxy on the loopback interface, for testing a client's proxy support.
///
/// ```swift
/// let proxy = MockProxy(requiredCredentials: (user: "u", password: "p"))
/// try await proxy.start()
/// defer { Task { try await proxy.shutdown() } }
/// // ... point the client at proxy.url ...
/// #expect(proxy.requests.first?.method == "CONNECT")
/// ```
///
/// It speaks the two forms a client uses with a proxy:
///
/// - `CONNECT host:port`: answers `200 Connection Established` and then splices raw bytes in both directions, so
///   TLS to the origin runs end to end through the tunnel. An end of input on one side half-closes the other; a
///   close of either side closes both.
/// - An absolute-form request (`GET http://127.0.0.1:8080/a?b HTTP/1.1`, any method, with or without a body):
///   forwarded over a new connection per request in origin form (`GET /a?b`), with the client's fields minus
///   `Proxy-Authorization`, `Proxy-Connection`, `Connection` and `Keep-Alive`, plus `Connection: close`. The
///   origin's response is streamed back unchanged and the client connection closes when the origin's does — the
///   simplest behaviour that is always correct, since the proxy never has to find where a response ends.
///
/// It only ever connects to the loopback interface: any other target (`127.0.0.1`, `::1` and `localhost` are
/// allowed) gets `403 Forbidden`. An origin that cannot be reached gets `502 Bad Gateway`, a request in origin form
/// (`GET /x`) or with an unparsable target `400 Bad Request`, and with ``init(requiredCredentials:realm:)``'s
/// credentials set a request without them `407 Proxy Authentication Required`. Refusals carry
/// `Content-Length: 0` and close the connection, except a 407 to an absolute-form request, which keeps it open so
/// that the client can retry on it.
///
/// The proxy runs on ``MockServerEventLoops/group``; each upstream connection shares its client
/// connection's event loop, and reading pauses on either side while the other cannot take more bytes.
public final class MockProxy: Sendable {
    private let credentials: ProxyCredentialCheck?
    private let state = ProxyState<ProxiedRequest>()
    private let listener = LoopbackListener()

    /// Creates a proxy; it does not listen until ``start()``.
    ///
    /// - Parameters:
    ///   - requiredCredentials: When set, every request must carry
    ///     `Proxy-Authorization: Basic base64(user:password)`, else the proxy answers
    ///     `407 Proxy Authentication Required` with `Proxy-Authenticate: Basic realm="<realm>"`.
    ///   - realm: The realm named in the challenge.
    public init(requiredCredentials: (user: String, password: String)? = nil, realm: String = "mock proxy") {
        self.credentials = requiredCredentials.map {
            ProxyCredentialCheck(user: $0.user, password: $0.password, realm: realm)
        }
    }

    deinit {
        listener.closeNow()
        for channel in state.shutDown() {
            channel.close(promise: nil)
        }
    }

    // MARK: Lifecycle

    /// Listens on 127.0.0.1 on an ephemeral port; afterwards ``port`` and ``url`` are valid.
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
            // A tunnel passes a client's half-close on to the origin instead of tearing the connection down.
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    guard let id = state.openClientConnection(channel) else { throw MockServerError.shutDown }
                    channel.closeFuture.whenComplete { _ in state.closeClientConnection(id: id) }
                    let pipeline = channel.pipeline.syncOperations
                    // `.forwardBytes`: the bytes after a CONNECT head belong to the tunnel.
                    try pipeline.addHandler(
                        ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .forwardBytes)))
                    try pipeline.addHandler(
                        ProxyConnectionHandler(state: state, connectionID: id, credentials: credentials)
                    )
                }
            }
    }

    // MARK: Addresses

    /// The bound port; valid after ``start()`` (0 before).
    public var port: Int {
        listener.port
    }

    /// The proxy's URL, `http://127.0.0.1:<port>`.
    public var url: URL {
        let text = "http://127.0.0.1:\(port)"
        return URL(string: text) ?? URL(fileURLWithPath: text)
    }

    // MARK: Inspection

    /// Every request the proxy received, in order, refused ones included; each is recorded when its head arrives
    /// and its ``ProxiedRequest/answeredStatus`` is filled in once known.
    public var requests: [ProxiedRequest] {
        state.requests
    }

    /// The number of client connections accepted so far.
    public var connectionCount: Int {
        state.connectionCount
    }
}
