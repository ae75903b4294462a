import NIOHTTP2

/// The HTTP/2 settings Courier's client announces and the flow-control windows it keeps.
enum HTTP2Tuning {
    /// The largest header list a response may carry: 1 MiB, the limit HTTP/1.1 heads have too
    /// (``ResponseHeadNormalizer``), so that a response does not fail over one protocol only.
    static let maximumHeaderListSize = 1 << 20

    /// Each stream's receive window: large enough that a fast download is not held back by window updates on a
    /// low-latency path, small enough that a paused task buffers at most this much.
    static let streamWindowSize = 1 << 20

    /// The connection's receive window, shared by its streams: room for several busy streams at once.
    static let connectionWindowSize = 16 << 20

    /// What the client announces: no server push, no streams the server may open, the windows and header limit
    /// above.
    static var connectionConfiguration: NIOHTTP2Handler.ConnectionConfiguration {
        var configuration = NIOHTTP2Handler.ConnectionConfiguration()
        configuration.initialSettings = [
            HTTP2Setting(parameter: .enablePush, value: 0),
            HTTP2Setting(parameter: .maxConcurrentStreams, value: 0),
            HTTP2Setting(parameter: .initialWindowSize, value: streamWindowSize),
            HTTP2Setting(parameter: .maxHeaderListSize, value: maximumHeaderListSize),
        ]
        configuration.targetWindowSize = connectionWindowSize
        return configuration
    }

    /// How stream channels manage their windows.
    static var streamConfiguration: NIOHTTP2Handler.StreamConfiguration {
        var configuration = NIOHTTP2Handler.StreamConfiguration()
        configuration.targetWindowSize = streamWindowSize
        return configuration
    }
}
