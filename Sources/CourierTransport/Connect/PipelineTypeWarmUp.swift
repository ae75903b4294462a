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
enum PipelineTypeWarmUp {
    private static let done: Void = {
        // Each handler is made and dropped: making it completes the metadata of its type and of its arguments.
        keep(ByteToMessageHandler(HTTPResponseDecoder()))
        keep(HTTPRequestEncoder())
        keep(HTTP2FramePayloadToHTTP1ClientCodec(httpProtocol: .https))
        keep(NIOHTTP2Handler(mode: .client))
        keep(WebSocketFrameEncoder())
        keep(ByteToMessageHandler(WebSocketFrameDecoder()))
    }()

    /// Makes sure the types are built; returns at once after the first call has finished.
    static func ensure() {
        _ = done
    }

    /// Keeps the optimizer from dropping a value whose making is the point.
    @inline(never)
    private static func keep(_ value: Any) {
        withExtendedLifetime(value) {}
    }
}
