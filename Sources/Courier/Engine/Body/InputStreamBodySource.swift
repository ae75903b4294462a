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

/// Reads one `InputStream` on a serial queue of its own, straight into the chunk's buffer. An app's stream is user
/// code that may block for as long as the app likes (a bound pair it writes to as data comes, a pipe): it must not
/// hold one of the few threads of NIO's shared pool, which file bodies and TLS setup need, and its `close()` must not
/// run on an event loop. Opening, every read and closing run on the queue, in that order.
private struct InputStreamBodyReader: EventLoopBodyReader {
    let box: InputStreamBox
    let queue: DispatchQueue

    static func open(_ box: InputStreamBox) async throws -> InputStreamBodyReader {
        let queue = DispatchQueue(label: "courier.body-stream")
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            queue.async {
                continuation.resume(
                    with: Result<Void, any Error> {
                        if box.stream.streamStatus == .notOpen { box.stream.open() }
                        if box.stream.streamStatus == .error {
                            throw TransferError.requestBodyStreamExhausted(
                                "the body stream could not be opened: \(box.stream.streamError.map { "\($0)" } ?? "unknown error")"
                            )
                        }
                    })
            }
        }
        return InputStreamBodyReader(box: box, queue: queue)
    }

    func read(maxLength: Int, on eventLoop: any EventLoop) -> EventLoopFuture<ByteBuffer?> {
        let box = self.box
        let promise = eventLoop.makePromise(of: ByteBuffer?.self)
        queue.async {
            promise.completeWith(Result<ByteBuffer?, any Error> { try Self.chunk(of: box, maxLength: maxLength) })
        }
        return promise.futureResult
    }

    /// One `read(_:maxLength:)` of the stream into a new buffer; `nil` at the end. On the reader's queue.
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
            // Foundation on Linux traps when `streamError` is read of a stream that has none (one the app closed
            // before handing it over returns -1 with no error): ask only a failed stream.
            let status = box.stream.streamStatus
            let reason = (status == .error ? box.stream.streamError : nil).map { "\($0)" }
            throw TransferError.requestBodyStreamExhausted(
                "reading the body stream failed: \(reason ?? "no error given, stream status \(status.rawValue)")")
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

    /// On the queue, after any read handed over before: the stream's `close()` is the app's code.
    func close() {
        let box = self.box
        queue.async { box.stream.close() }
    }

    /// A bound pair's input stream (Courier's own, whose `close()` may be called from any thread) is closed at once:
    /// a read waiting for the app's writer would otherwise hold the queue's thread, and leave the writer unaware,
    /// until the app wrote again. An app's own stream is only closed after its read, by `close()`.
    func interruptRead() {
        (box.stream as? BoundInputStream)?.close()
    }
}
