import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOWebSocket

/// Builds, once per process and on one thread, the generic types the connection pipelines use, before the first
/// connection is opened.
///
/// Why: the Swift runtime (seen with 6.3.1 on Linux) can crash when two threads instantiate the metadata of the same
/// generic type for the first time at once. Courier opens its first connections on several event loops together
/// (`courier get -Z`, a server's first burst of requests), and each builds the same pipeline: a run of parallel
/// downloads crashed with a null pointer in `swift_checkMetadataState`, one event loop checking the conformances of
/// `ByteToMessageHandler<HTTPResponseDecoder>`'s arguments while the other was still building `HTTPPart`'s metadata.
/// Once a type's metadata is complete, looking it up from many threads is safe, so building these types here first,
/// behind a `static let` (which runs once and makes other callers wait), takes the pipelines out of that race.
///
/// Each protocol's types are built just before its first connection, not all at once: making an HTTP/2 handler up
/// front touched enough of NIOHTTP2's code to add about 0.6 MiB to the peak resident memory of a process that only
/// ever speaks HTTP/1.1.
enum PipelineTypeWarmUp {
    // Each handler is made and dropped: making it completes the metadata of its type and of its arguments.
    private static let http1: Void = {
        keep(HTTP1ClientCodec(endpoint: Endpoint(scheme: .http, host: "localhost", port: 80)))
        keep(NIOAny(HTTPClientResponsePart.end(nil)))
        keep(NIOAny(HTTPClientRequestPart.end(nil)))
    }()
    private static let http2: Void = {
        keep(HTTP2FramePayloadToHTTP1ClientCodec(httpProtocol: .https))
        keep(NIOHTTP2Handler(mode: .client))
    }()
    private static let webSocket: Void = {
        keep(WebSocketFrameEncoder())
        keep(ByteToMessageHandler(CheckedWebSocketFrameDecoder(maxFrameSize: 1 << 14)))
    }()

    /// Makes sure the HTTP/1.1 pipeline's types are built (every connection starts with them); returns at once after
    /// the first call has finished.
    static func ensureHTTP1() {
        _ = http1
    }

    /// The same for an HTTP/2 connection's and its streams' types, before the first one is set up.
    static func ensureHTTP2() {
        _ = http2
    }

    /// The same for the WebSocket frame coders, before the first connection is upgraded.
    static func ensureWebSocket() {
        _ = webSocket
    }

    /// Keeps the optimizer from dropping a value whose making is the point.
    @inline(never)
    private static func keep(_ value: Any) {
        withExtendedLifetime(value) {}
    }
}
