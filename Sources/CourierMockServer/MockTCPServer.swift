import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL

/// An in-process raw TCP server on the loopback interface, for testing stream clients (`URLSessionStreamTask`).
///
/// ```swift
/// let server = MockTCPServer(mode: .echo, startTLSCommand: "STARTTLS\r\n")
/// try await server.start()
/// defer { Task { await server.shutdown() } }
/// // ... connect to 127.0.0.1:server.port, trust server.certificateDER ...
/// #expect(server.receivedBytes == Array("hello".utf8))
/// ```
///
/// Every connection runs the server's ``Mode``: ``Mode/echo`` sends back what it receives (and closes its write side
/// once the client closed its own), ``Mode/script(_:)`` runs steps, ``Mode/silent`` never reads (a peer whose
/// buffers fill up, for write timeouts). Every byte received is recorded, in arrival order, in ``receivedBytes``.
///
/// With a `startTLSCommand`, the connection starts in plain text, line by line: a line equal to the command gets
/// `READY\r\n` and the connection turns to TLS (the server's handshake follows), any other line is handled by the
/// mode (echoed, or recorded). Inside TLS the mode goes on with the decrypted bytes. The server presents a freshly
/// generated self-signed certificate for `localhost`, `127.0.0.1` and `::1` (``certificateDER``), or the given
/// ``MockTLSIdentity``. The command line itself is recorded like any other bytes.
///
/// The server runs on ``MockServerEventLoops/group`` and lets clients half-close.
public final class MockTCPServer: Sendable {
    /// What the server does on each connection.
    public enum Mode: Sendable, Equatable {
        /// Sends back every byte received; when the client closes its write side, closes its own.
        case echo
        /// Runs these steps in order, recording what it receives meanwhile.
        case script([MockTCPStep])
        /// Never reads: what the client writes fills the socket buffers, and writes then wait.
        case silent
    }

    /// The reply to the STARTTLS command, before the handshake.
    public static let startTLSReply = "READY\r\n"

    private let mode: Mode
    private let startTLSCommand: String?
    private let tlsIdentity: MockTLSIdentity?
    private let state = MockTCPState()
    private let listener = LoopbackListener()
    private let identity = NIOLockedValueBox<SelfSignedIdentity?>(nil)

    /// Creates a server; it does not listen until ``start()``.
    ///
    /// - Parameters:
    ///   - mode: What each connection does.
    ///   - startTLSCommand: The line (with its `\r\n`) that turns a connection to TLS; `nil` for plain TCP only.
    ///   - tlsIdentity: The certificate chain and key to present in TLS; `nil` for a generated self-signed one.
    public init(mode: Mode = .echo, startTLSCommand: String? = nil, tlsIdentity: MockTLSIdentity? = nil) {
        self.mode = mode
        self.startTLSCommand = startTLSCommand
        self.tlsIdentity = tlsIdentity
    }

    deinit {
        listener.closeNow()
        for channel in state.shutDown() {
            channel.close(promise: nil)
        }
    }

    /// Listens on 127.0.0.1 on an ephemeral port; afterwards ``port`` is valid.
    ///
    /// - Throws: ``MockServerError/alreadyStarted`` when called twice or after ``shutdown()``, the bind error, or
    ///   the error of making the TLS identity.
    public func start() async throws {
        if startTLSCommand != nil {
            let made =
                try tlsIdentity.map { try SelfSignedIdentity(custom: $0, applicationProtocols: []) }
                ?? SelfSignedIdentity(applicationProtocols: [])
            identity.withLockedValue { $0 = made }
        }
        try await listener.start(makeBootstrap())
    }

    /// Closes the listening socket and every connection. Idempotent.
    public func shutdown() async {
        await listener.shutdown()
        for channel in state.shutDown() {
            try? await channel.close()
        }
    }

    /// The bound port; valid after ``start()`` (0 before).
    public var port: Int {
        listener.port
    }

    /// Every byte received on every connection, in arrival order (plain text and decrypted TLS alike).
    public var receivedBytes: [UInt8] {
        state.received
    }

    /// The number of connections accepted so far.
    public var connectionCount: Int {
        state.connectionCount
    }

    /// How many connections read the client's end of input (the client closed its write side).
    public var endOfInputCount: Int {
        state.endOfInputCount
    }

    /// The certificate presented in TLS (the leaf, DER encoded), so a client can trust it; empty without a
    /// `startTLSCommand`, or before ``start()``.
    public var certificateDER: [UInt8] {
        identity.withLockedValue { $0?.certificateDER ?? [] }
    }

    private func makeBootstrap() -> ServerBootstrap {
        let state = state
        let mode = mode
        let command = startTLSCommand.map { Array($0.utf8) }
        let sslContext = identity.withLockedValue { $0?.sslContext }
        return ServerBootstrap(group: MockServerEventLoops.group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            .childChannelOption(.autoRead, value: mode != .silent)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    guard state.open(channel) else { throw MockServerError.shutDown }
                    channel.closeFuture.whenComplete { _ in state.closed(channel) }
                    try channel.pipeline.syncOperations.addHandler(
                        MockTCPConnectionHandler(
                            mode: mode, state: state, startTLSCommand: command, sslContext: sslContext))
                }
            }
    }
}
