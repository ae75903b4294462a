import NIOHTTP2

/// The HTTP/2 settings Courier's client announces and the flow-control windows it keeps.
enum HTTP2Tuning {
    /// The largest header list a response may carry: 1 MiB, the limit on the bytes of an HTTP/1.1 head
    /// (``ResponseHeadSyntax/maximumHeadLength``). HTTP/1.1 also bounds the fields' names and values at 80 KiB
    /// (``HTTP1ResponseHeadParser/maximumFieldBytes``); HPACK counts 32 bytes more per field, so the two do not map
    /// onto each other exactly.
    static let maximumHeaderListSize = 1 << 20

    /// The receive window kept for each stream, and for the connection as a whole: large enough that a fast
    /// download is not held back by window updates, small enough that a paused task buffers at most this much.
    /// (NIOHTTP2's stream multiplexer keeps one target for both.)
    static let windowSize = 2 << 20

    /// How many bytes a stream's channel queues for sending before it reports itself unwritable (request bodies
    /// then wait), and how few before it is writable again.
    static let outboundHighWatermark = 64 << 10
    static let outboundLowWatermark = 32 << 10

    /// What the client announces: no server push, no streams the server may open, the window and header limit
    /// above.
    static var connectionConfiguration: NIOHTTP2Handler.ConnectionConfiguration {
        var configuration = NIOHTTP2Handler.ConnectionConfiguration()
        configuration.initialSettings = [
            HTTP2Setting(parameter: .enablePush, value: 0),
            HTTP2Setting(parameter: .maxConcurrentStreams, value: 0),
            HTTP2Setting(parameter: .initialWindowSize, value: windowSize),
            HTTP2Setting(parameter: .maxHeaderListSize, value: maximumHeaderListSize),
        ]
        return configuration
    }
}
