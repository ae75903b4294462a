import CourierHTTP
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL

/// Opens connections: TCP (host names resolved with happy eyeballs), TLS with SNI, verification and ALPN, then the
/// protocol ALPN chose: HTTP/2 (NIOHTTP2, once the server's SETTINGS arrived) or the HTTP/1.1 pipeline. Plain
/// `http` is always HTTP/1.1, as on Darwin.
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
    ) -> EventLoopFuture<any PooledConnection> {
        // Before any event loop builds a pipeline: see `PipelineTypeWarmUp` for the runtime crash this avoids.
        PipelineTypeWarmUp.ensureHTTP1()
        let eventLoop = group.next()
        guard let tls = key.tls else {
            return open(
                key: key, id: id, sslContext: nil, on: eventLoop, connectTimeout: connectTimeout, trustEvaluator: nil,
                tunnelAuthorization: nil)
        }
        return tlsContexts.clientContext(
            for: tls, endpoint: key.endpoint, trustEvaluator: trustEvaluator,
            clientCertificateProvider: clientCertificateProvider, on: eventLoop
        )
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
    ) -> EventLoopFuture<any PooledConnection> {
        let endpoint = key.endpoint
        let ready = eventLoop.makePromise(of: String?.self)
        let serverHostname = endpoint.hostIsIPLiteral ? nil : endpoint.host
        // Without an evaluator NIOSSL verifies the server, and its host check needs this one after it.
        let checksLeafHost = sslContext != nil && trustEvaluator == nil
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
                    if let proxy = key.proxy {
                        switch proxy.kind {
                        case .socks5:
                            try sync.addHandler(
                                SOCKSConnectHandler(
                                    host: endpoint.host, port: endpoint.port, user: proxy.user,
                                    password: proxy.password))
                        case .http where endpoint.scheme == .https || key.upgrade != nil:
                            // An upgrade goes through a tunnel even for `http`: a proxy would not pass it on.
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
                    if sslContext == nil {
                        // No ALPN to wait for: HTTP/1.1 from the start. Straight to the server, nothing after the
                        // codec needs a body's bytes: a file may go out with sendfile(2).
                        try Self.addHTTP1Handlers(
                            to: channel, endpoint: endpoint, idleConnectionTimeout: idleTimeout,
                            sendsFileRegions: key.proxy == nil)
                    }
                }
            }
        let connected: EventLoopFuture<any Channel>
        if let path = endpoint.unixSocketPath {
            connected = bootstrap.connect(unixDomainSocketPath: path)
        } else if let proxy = key.proxy {
            connected = HostConnector.connect(bootstrap, host: proxy.host, port: proxy.port)
        } else {
            connected = HostConnector.connect(bootstrap, host: endpoint.host, port: endpoint.port)
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
                }.flatMap { negotiatedProtocol -> EventLoopFuture<any PooledConnection> in
                    // Runs on the channel's loop as the handshake completes, before any byte after it is read, so
                    // the pipeline for the chosen protocol is in place when the server's first bytes arrive.
                    // NIOSSL verified the chain, and the host only loosely (see `PeerCertificateHost`): the leaf
                    // must name the host asked for before anything is sent.
                    if checksLeafHost, !PeerCertificateHost.handshakeLeaf(in: channel.pipeline, names: endpoint.host) {
                        channel.close(promise: nil)
                        return channel.eventLoop.makeFailedFuture(
                            TransferError.serverCertificateUntrusted(
                                "the certificate of \(endpoint) does not name \(endpoint.host)"))
                    }
                    var establishment = ConnectionEstablishment(connectStart: connectStart, connectEnd: connectEnd)
                    if sslContext != nil {
                        establishment.secureConnectionStart = connectEnd
                        establishment.secureConnectionEnd = Date()
                        let version = try? channel.pipeline.syncOperations.handler(type: NIOSSLClientHandler.self)
                            .tlsVersion
                        establishment.tlsProtocolVersion = version.map(Self.name(of:))
                    }
                    do {
                        if negotiatedProtocol == "h2" {
                            return try startHTTP2(
                                channel: channel, key: key, id: id, establishment: establishment,
                                settingsTimeout: connectTimeout)
                        }
                        if sslContext != nil {
                            try Self.addHTTP1Handlers(
                                to: channel, endpoint: endpoint, idleConnectionTimeout: idleTimeout,
                                sendsFileRegions: false)
                        }
                        let handler = try channel.pipeline.syncOperations.handler(type: HTTP1ClientHandler.self)
                        handler.establishment = establishment
                        let connection: any PooledConnection = HTTP1Connection(
                            id: id, key: key, channel: channel,
                            handler: NIOLoopBound(handler, eventLoop: channel.eventLoop))
                        return channel.eventLoop.makeSucceededFuture(connection)
                    } catch {
                        channel.close(promise: nil)
                        return channel.eventLoop.makeFailedFuture(error)
                    }
                }
            }
            .flatMapErrorThrowing { error in
                ready.fail(error)  // never leave the promise unfulfilled when the connect itself failed
                if error is ProxyTunnelRefusal { throw error }  // the pool answers the exchange with it
                if let rejected = rejection.withLockedValue({ $0 }) { throw rejected }
                throw TransportErrorMapping.connectError(error, endpoint: endpoint)
            }
    }

    /// The HTTP/1.1 pipeline: the codec and the exchange handler, with the raw read activity watched ahead of TLS so
    /// that bytes that do not yet complete a record still count. The codec hands on the bytes behind a `101` head
    /// when it is removed. `sendsFileRegions`: whether a file's body may go out with `sendfile(2)` (see
    /// ``FileRegionBodyReader``).
    private static func addHTTP1Handlers(
        to channel: any Channel, endpoint: Endpoint, idleConnectionTimeout: TimeAmount, sendsFileRegions: Bool
    ) throws {
        let sync = channel.pipeline.syncOperations
        let client = HTTP1ClientHandler(
            endpoint: endpoint, idleConnectionTimeout: idleConnectionTimeout, protocolName: "http/1.1",
            sendsFileRegions: sendsFileRegions)
        try sync.addHandler(ReadActivityHandler { [unowned client] in client.noteReadActivity() }, position: .first)
        try sync.addHandler(HTTP1ClientCodec(endpoint: endpoint))
        try sync.addHandler(client)
    }

    /// Sets up HTTP/2 on a connection whose TLS handshake chose `h2`; the connection is ready once the server's
    /// SETTINGS arrived (within `settingsTimeout`), which tell how many streams it may carry.
    private func startHTTP2(
        channel: any Channel, key: PoolKey, id: Int, establishment: ConnectionEstablishment,
        settingsTimeout: TimeAmount
    ) throws -> EventLoopFuture<any PooledConnection> {
        PipelineTypeWarmUp.ensureHTTP2()
        let settings = channel.eventLoop.makePromise(of: Int.self)
        let monitor = HTTP2ConnectionMonitor(
            ready: settings, timing: HTTP2ConnectionMonitor.Timing(idleTimeout: idleConnectionTimeout))
        // NIOHTTP2's handler, the flush coalescer, the monitor, then the stream multiplexer: between the handler and
        // the multiplexer the monitor sees every frame and stream event (the multiplexer built into the handler would
        // keep stream events to itself, and the monitor needs them to count open streams and to tell a stream's
        // error from the connection's). The coalescer is nearest the handler, so that a close the monitor asks for
        // also sends what it held back first. The monitor is also the handler's frame delegate: the GOAWAY the handler
        // writes tells a connection error from a stream error.
        let http2 = NIOHTTP2Handler(
            mode: .client, frameDelegate: monitor, connectionConfiguration: HTTP2Tuning.connectionConfiguration)
        let multiplexer = HTTP2StreamMultiplexer(
            mode: .client, channel: channel, targetWindowSize: HTTP2Tuning.windowSize,
            outboundBufferSizeHighWatermark: HTTP2Tuning.outboundHighWatermark,
            outboundBufferSizeLowWatermark: HTTP2Tuning.outboundLowWatermark,
            inboundStreamInitializer: { stream in
                // Push is turned off in our SETTINGS; a server that opens a stream anyway gets it refused.
                stream.eventLoop.makeFailedFuture(ChannelError.operationUnsupported)
            })
        let sync = channel.pipeline.syncOperations
        try sync.addHandler(http2)
        try sync.addHandler(HTTP2FlushCoalescer())
        try sync.addHandler(monitor)
        try sync.addHandler(multiplexer)
        let timer = channel.eventLoop.scheduleTask(in: settingsTimeout) {
            settings.fail(ChannelError.connectTimeout(settingsTimeout))
        }
        let idleTimeout = idleConnectionTimeout
        let boundMonitor = NIOLoopBound(monitor, eventLoop: channel.eventLoop)
        let boundMultiplexer = NIOLoopBound(multiplexer, eventLoop: channel.eventLoop)
        return settings.futureResult.flatMapErrorThrowing { error in
            timer.cancel()
            channel.close(promise: nil)
            throw error
        }.map { capacity -> any PooledConnection in
            timer.cancel()
            return HTTP2Connection(
                id: id, key: key, channel: channel, capacity: capacity, multiplexer: boundMultiplexer.value,
                monitor: boundMonitor.value,
                establishment: establishment, idleConnectionTimeout: idleTimeout)
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

    /// NIOSSL's own verification, or, with an evaluator, a verification callback that awaits it off the loop (also
    /// used by stream connections that start TLS, so both kinds of connection trust the same servers).
    static func makeTLSHandler(
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
