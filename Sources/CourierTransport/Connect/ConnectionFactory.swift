import CourierHTTP
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// Opens connections: TCP (host names resolved with happy eyeballs), TLS with SNI and verification, and the
/// HTTP/1.1 pipeline with automatic gzip/deflate/brotli decoding.
struct ConnectionFactory: Sendable {
    let group: any EventLoopGroup
    let tlsContexts: TLSContextCache
    let idleConnectionTimeout: TimeAmount

    func connect(
        key: PoolKey,
        id: Int,
        connectTimeout: TimeAmount,
        trustEvaluator: (any ServerTrustEvaluator)?,
        clientCertificateProvider: (any ClientCertificateProvider)? = nil,
        tunnelAuthorization: String? = nil
    ) -> EventLoopFuture<HTTP1Connection> {
        let eventLoop = group.next()
        guard let tls = key.tls else {
            return open(
                key: key, id: id, sslContext: nil, on: eventLoop, connectTimeout: connectTimeout, trustEvaluator: nil,
                tunnelAuthorization: nil)
        }
        let context: EventLoopFuture<NIOSSLContext>
        if let clientCertificateProvider {
            context = tlsContexts.context(
                for: tls, provider: clientCertificateProvider, endpoint: key.endpoint,
                loadsTrustRoots: trustEvaluator == nil, on: eventLoop)
        } else {
            context = tlsContexts.context(for: tls, on: eventLoop)
        }
        return
            context
            .flatMapErrorThrowing { error in
                throw error as? TransferError ?? .secureConnectionFailed("cannot set up TLS: \(error)")
            }
            .flatMap { sslContext in
                open(
                    key: key, id: id, sslContext: sslContext, on: eventLoop, connectTimeout: connectTimeout,
                    trustEvaluator: trustEvaluator, tunnelAuthorization: tunnelAuthorization)
            }
    }

    private func open(
        key: PoolKey,
        id: Int,
        sslContext: NIOSSLContext?,
        on eventLoop: any EventLoop,
        connectTimeout: TimeAmount,
        trustEvaluator: (any ServerTrustEvaluator)?,
        tunnelAuthorization: String?
    ) -> EventLoopFuture<HTTP1Connection> {
        let endpoint = key.endpoint
        let ready = eventLoop.makePromise(of: Void.self)
        let serverHostname = endpoint.hostIsIPLiteral ? nil : endpoint.host
        let idleTimeout = idleConnectionTimeout
        let connectStart = Date()
        // An evaluator's reason for rejecting the server, which the failed handshake itself cannot carry.
        let rejection = NIOLockedValueBox<TransferError?>(nil)
        var bootstrap = ClientBootstrap(group: eventLoop).connectTimeout(connectTimeout)
        if endpoint.unixSocketPath == nil {
            // TCP only: a Unix domain socket refuses the option (and has no Nagle delay to turn off).
            bootstrap = bootstrap.channelOption(.socketOption(.tcp_nodelay), value: 1)
        }
        bootstrap =
            bootstrap
            // Reads grow to 256 KiB on a busy connection: fewer, larger body parts for big transfers, with a
            // bounded buffer per connection.
            .channelOption(
                .recvAllocator,
                value: AdaptiveRecvByteBufferAllocator(minimum: 1024, initial: 16 * 1024, maximum: 256 * 1024)
            )
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    let client = HTTP1ClientHandler(
                        endpoint: endpoint,
                        idleConnectionTimeout: idleTimeout,
                        protocolName: "http/1.1"
                    )
                    try sync.addHandler(ReadActivityHandler { [unowned client] in client.noteReadActivity() })
                    if let proxy = key.proxy {
                        switch proxy.kind {
                        case .socks5:
                            try sync.addHandler(
                                SOCKSConnectHandler(
                                    host: endpoint.host, port: endpoint.port, user: proxy.user,
                                    password: proxy.password))
                        case .http where endpoint.scheme == .https:
                            try sync.addHandler(
                                TunnelConnectHandler(authority: endpoint.authority, authorization: tunnelAuthorization))
                        case .http:
                            break  // absolute-form requests straight to the proxy
                        }
                    }
                    if let sslContext {
                        try sync.addHandler(
                            Self.makeTLSHandler(
                                context: sslContext,
                                serverHostname: serverHostname,
                                endpoint: endpoint,
                                evaluator: trustEvaluator,
                                rejection: rejection
                            )
                        )
                    }
                    try sync.addHandler(ConnectionReadyHandler(promise: ready, waitsForTLS: sslContext != nil))
                    try sync.addHandler(HTTPRequestEncoder())
                    try sync.addHandler(ResponseHeadNormalizer())
                    try sync.addHandler(
                        ByteToMessageHandler(
                            HTTPResponseDecoder(
                                leftOverBytesStrategy: .dropBytes, informationalResponseStrategy: .forward)
                        )
                    )
                    try sync.addHandler(client)
                }
            }
        let connected: EventLoopFuture<any Channel>
        if let path = endpoint.unixSocketPath {
            connected = bootstrap.connect(unixDomainSocketPath: path)
        } else if let proxy = key.proxy {
            connected = bootstrap.connect(host: proxy.host, port: proxy.port)
        } else {
            connected = bootstrap.connect(host: endpoint.host, port: endpoint.port)
        }
        return
            connected
            .flatMap { channel in
                let connectEnd = Date()
                // The TCP connect has its own timeout; the TLS handshake after it gets the same budget, or a
                // server that accepts and never answers would hold the task and its pool slot forever.
                let handshakeTimer = channel.eventLoop.scheduleTask(in: connectTimeout) {
                    ready.fail(ChannelError.connectTimeout(connectTimeout))
                }
                ready.futureResult.whenComplete { _ in handshakeTimer.cancel() }
                return ready.futureResult.flatMapErrorThrowing { error in
                    channel.close(promise: nil)
                    throw error
                }.flatMapThrowing {
                    let sync = channel.pipeline.syncOperations
                    let handler = try sync.handler(type: HTTP1ClientHandler.self)
                    var establishment = ConnectionEstablishment(connectStart: connectStart, connectEnd: connectEnd)
                    if sslContext != nil {
                        establishment.secureConnectionStart = connectEnd
                        establishment.secureConnectionEnd = Date()
                        let version = try? sync.handler(type: NIOSSLClientHandler.self).tlsVersion
                        establishment.tlsProtocolVersion = version.map(Self.name(of:))
                    }
                    handler.establishment = establishment
                    return HTTP1Connection(
                        id: id, key: key, channel: channel, handler: NIOLoopBound(handler, eventLoop: channel.eventLoop)
                    )
                }
            }
            .flatMapErrorThrowing { error in
                ready.fail(error)  // never leave the promise unfulfilled when the connect itself failed
                if error is ProxyTunnelRefusal { throw error }  // the pool answers the exchange with it
                if let rejected = rejection.withLockedValue({ $0 }) { throw rejected }
                throw TransportErrorMapping.connectError(error, endpoint: endpoint)
            }
    }

    /// The name `URLSessionTaskTransactionMetrics` uses for a TLS version.
    private static func name(of version: TLSVersion) -> String {
        switch version {
        case .tlsv1: return "TLSv1.0"
        case .tlsv11: return "TLSv1.1"
        case .tlsv12: return "TLSv1.2"
        case .tlsv13: return "TLSv1.3"
        }
    }

    /// NIOSSL's own verification, or, with an evaluator, a verification callback that awaits it off the loop.
    private static func makeTLSHandler(
        context: NIOSSLContext,
        serverHostname: String?,
        endpoint: Endpoint,
        evaluator: (any ServerTrustEvaluator)?,
        rejection: NIOLockedValueBox<TransferError?>
    ) throws -> NIOSSLClientHandler {
        guard let evaluator else {
            return try NIOSSLClientHandler(context: context, serverHostname: serverHostname)
        }
        return try NIOSSLClientHandler(context: context, serverHostname: serverHostname) { certificates, promise in
            let chain = certificates.compactMap { try? $0.toDERBytes() }
            Task {
                switch await evaluator.evaluate(certificateChain: chain, host: endpoint.host, port: endpoint.port) {
                case .trust:
                    promise.succeed(.certificateVerified)
                case .reject(let error):
                    rejection.withLockedValue { $0 = error }
                    promise.succeed(.failed)
                }
            }
        }
    }
}
