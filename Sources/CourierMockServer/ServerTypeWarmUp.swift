import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOWebSocket

/// Builds, once per process and before the first server starts, the generic handler types the servers' pipelines
/// use, for the same reason as the client's warm-up in CourierTransport: the Swift runtime (6.3.1 on Linux) can crash
/// when two threads instantiate the same generic type's metadata for the first time at once. A test process runs a
/// client and servers side by side, and both build their HTTP/2 handlers right after the same TLS handshake, and
/// their WebSocket frame coders right after the same 101: with the server's types complete beforehand, the client's
/// first use of them cannot race the server's.
enum ServerTypeWarmUp {
    private static let done: Void = {
        // Each handler is made and dropped: making it completes the metadata of its type and of its arguments.
        keep(ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .forwardBytes)))
        keep(HTTPResponseEncoder())
        keep(NIOHTTP2Handler(mode: .server))
        keep(HTTP2FramePayloadToHTTP1ServerCodec())
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
