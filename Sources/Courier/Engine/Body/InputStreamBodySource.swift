import CourierHTTP
import CourierTransport
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A request body read from `InputStream`s: the request's own `httpBodyStream` for the first pass, then, each
/// time the body must be sent again (a retry, a 307/308 redirect), a new stream from the delegate's
/// `needNewBodyStream`. Streamed uploads ask the delegate from the first pass on.
final class InputStreamBodySource: TransportBodySource {
    private let firstStream: NIOLockedValueBox<InputStreamBox?>
    /// Asks the app for a new stream (`needNewBodyStream`, through the task's event adapter).
    private let newStream: @Sendable () async -> InputStream?

    init(initialStream: InputStream?, newStream: @escaping @Sendable () async -> InputStream?) {
        self.firstStream = NIOLockedValueBox(initialStream.map(InputStreamBox.init))
        self.newStream = newStream
    }

    func makeReader() async throws -> any TransportBodyReader {
        let initial = firstStream.withLockedValue { box in
            defer { box = nil }
            return box
        }
        if let initial {
            return try await InputStreamBodyReader.open(initial)
        }
        guard let stream = await newStream() else {
            throw TransferError.requestBodyStreamExhausted("no body stream was provided for the request")
        }
        return try await InputStreamBodyReader.open(InputStreamBox(stream))
    }
}

/// Reads one `InputStream` on NIO's thread pool (stream reads block), straight into the chunk's buffer.
private struct InputStreamBodyReader: EventLoopBodyReader {
    let box: InputStreamBox

    static func open(_ box: InputStreamBox) async throws -> InputStreamBodyReader {
        try await NIOThreadPool.singleton.runIfActive {
            if box.stream.streamStatus == .notOpen { box.stream.open() }
            if box.stream.streamStatus == .error {
                throw TransferError.requestBodyStreamExhausted(
                    "the body stream could not be opened: \(box.stream.streamError.map { "\($0)" } ?? "unknown error")"
                )
            }
        }
        return InputStreamBodyReader(box: box)
    }

    func read(maxLength: Int, on eventLoop: any EventLoop) -> EventLoopFuture<ByteBuffer?> {
        let box = self.box
        return NIOThreadPool.singleton.runIfActive(eventLoop: eventLoop) {
            try Self.chunk(of: box, maxLength: maxLength)
        }
    }

    /// One `read(_:maxLength:)` of the stream into a new buffer; `nil` at the end. On the thread pool.
    private static func chunk(of box: InputStreamBox, maxLength: Int) throws -> ByteBuffer? {
        var buffer = ByteBuffer()
        var result = 0
        let count = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: maxLength) { bytes in
            guard let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return 0 }
            result = box.stream.read(base, maxLength: maxLength)
            // Only what the read may have written counts: never past `maxLength`, never a negative count.
            return min(max(result, 0), maxLength)
        }
        if result < 0 {
            throw TransferError.requestBodyStreamExhausted(
                "reading the body stream failed: \(box.stream.streamError.map { "\($0)" } ?? "unknown error")"
            )
        }
        if result > maxLength {
            // The stream claims more than it was given room for: its bytes cannot be trusted.
            throw TransferError.requestBodyStreamExhausted(
                "the body stream returned \(result) bytes for a read of at most \(maxLength)")
        }
        if count == 0 { return nil }
        // A stream that gives a little at a time (a pipe) must not keep a whole chunk's storage per part while the
        // part waits to be written.
        if count < maxLength / 2 { return ByteBuffer(buffer: buffer) }
        return buffer
    }

    func close() {
        box.stream.close()
    }
}
