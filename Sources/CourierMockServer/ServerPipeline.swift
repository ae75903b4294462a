import NIOCore
import NIOHTTP1
import NIOHTTP2

/// Sets up the pipelines that serve requests: HTTP/1.1 on a connection, or HTTP/2 on a connection and each of its
/// streams, chosen by ALPN for `.http2` servers.
enum ServerPipeline {
    /// Adds the HTTP/1.1 handlers to a connection's pipeline (after TLS, if any).
    static func addHTTP1Handlers(to channel: any Channel, state: ServerState, connectionID: Int) throws {
        let pipeline = channel.pipeline.syncOperations
        // The parser stops after a WebSocket upgrade request; when the decoder leaves for the WebSocket handlers, the
        // bytes it holds after the request are theirs (`.forwardBytes` only acts on that removal, never on a close).
        try pipeline.addHandler(ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .forwardBytes)))
        try pipeline.addHandler(ConnectionHandler(state: state, connectionID: connectionID))
    }

    /// Waits for the TLS handshake (already in the pipeline) to negotiate a protocol, then serves HTTP/2 if it was
    /// `h2` and HTTP/1.1 otherwise.
    static func addNegotiatingHandlers(
        to channel: any Channel,
        state: ServerState,
        connectionID: Int,
        settings: MockHTTP2Settings
    ) -> EventLoopFuture<Void> {
        channel.configureHTTP2SecureUpgrade(
            h2ChannelConfigurator: { channel in
                channel.eventLoop.makeCompletedFuture {
                    try addHTTP2Handlers(to: channel, state: state, connectionID: connectionID, settings: settings)
                }
            },
            http1ChannelConfigurator: { channel in
                channel.eventLoop.makeCompletedFuture {
                    try addHTTP1Handlers(to: channel, state: state, connectionID: connectionID)
                }
            }
        )
    }

    /// Adds NIOHTTP2's handler, announcing `settings`, and an ``HTTP2ConnectionHandler`` to a connection's pipeline;
    /// every stream the client opens gets its own pipeline from ``addStreamHandlers(to:streamID:connection:state:connectionID:)``.
    private static func addHTTP2Handlers(
        to channel: any Channel,
        state: ServerState,
        connectionID: Int,
        settings: MockHTTP2Settings
    ) throws {
        let connection = HTTP2ConnectionHandler(state: state)
        let boundConnection = NIOLoopBound(connection, eventLoop: channel.eventLoop)
        var connectionConfiguration = NIOHTTP2Handler.ConnectionConfiguration()
        // NIO's defaults (such as its header list size limit), with the scripted values in place of theirs.
        let announced: [HTTP2SettingsParameter] = [.maxConcurrentStreams, .initialWindowSize]
        connectionConfiguration.initialSettings =
            nioDefaultSettings.filter { !announced.contains($0.parameter) } + [
                HTTP2Setting(parameter: .maxConcurrentStreams, value: settings.maxConcurrentStreams),
                HTTP2Setting(parameter: .initialWindowSize, value: settings.initialWindowSize),
            ]
        var streamConfiguration = NIOHTTP2Handler.StreamConfiguration()
        // Keep reopening each stream's window to the size announced.
        streamConfiguration.targetWindowSize = settings.initialWindowSize
        let pipeline = channel.pipeline.syncOperations
        // NIOHTTP2Handler flushes its SETTINGS as it is added: a GOAWAY scripted to come with them is sent while that
        // flush is held back, so that both leave in one write.
        let goAway = state.takeGoAwayWithSettings()
        let hold = goAway.map { _ in FlushHold() }
        if let hold { try pipeline.addHandler(hold) }
        _ = try pipeline.configureHTTP2Pipeline(
            mode: .server,
            connectionConfiguration: connectionConfiguration,
            streamConfiguration: streamConfiguration,
            inboundStreamInitializer: { stream in
                stream.getOption(HTTP2StreamChannelOptions.streamID).flatMapThrowing { streamID in
                    try addStreamHandlers(
                        to: stream,
                        streamID: Int(streamID),
                        connection: boundConnection.value,
                        state: state,
                        connectionID: connectionID
                    )
                }
            }
        )
        try pipeline.addHandler(connection)
        if let goAway, let hold {
            connection.goAway(lastStreamID: 0, errorCode: goAway)
            pipeline.removeHandler(hold, promise: nil)
        }
    }

    /// Builds a stream's pipeline: ``HTTP2StreamEndpoint``, NIOHTTP2's HTTP/1 codec, ``HTTP1ResponseBytesToParts``
    /// and the ``ConnectionHandler`` that answers the request.
    private static func addStreamHandlers(
        to stream: any Channel,
        streamID: Int,
        connection: HTTP2ConnectionHandler,
        state: ServerState,
        connectionID: Int
    ) throws {
        state.recordHTTP2Stream()
        connection.streamOpened(streamID, channel: stream)
        let endpoint = HTTP2StreamEndpoint(streamID: streamID, connection: connection)
        let pipeline = stream.pipeline.syncOperations
        try pipeline.addHandler(endpoint)
        try pipeline.addHandler(HTTP2FramePayloadToHTTP1ServerCodec())
        try pipeline.addHandler(HTTP1ResponseBytesToParts(stream: endpoint))
        try pipeline.addHandler(ConnectionHandler(state: state, connectionID: connectionID, http2Stream: endpoint))
    }
}
