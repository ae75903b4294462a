import CourierHTTP
import NIOCore

/// Decodes a compressed response body (gzip, deflate or brotli) in bounded steps, so the consumer's demand decides
/// how much decoded data exists at any time.
///
/// Compressed input is queued with ``append(_:)``; each ``step(allocator:)`` produces at most ``stepSize``
/// decoded bytes and keeps what it did not consume for the next step. The library behind it (zlib for gzip and
/// deflate, see ``ContentInflater``; libbrotli, see ``BrotliDecoder``) only decodes: the steps, the limit on the
/// decoded size and the checks on how the body ends are the same for every coding, and live here. Bytes after the
/// end of the compressed data are an error (except another gzip member, RFC 1952 §2.2), and so is a body that
/// ends before its compressed data does.
///
/// Lives on one event loop; not thread-safe.
final class ContentDecoder {
    /// The most decoded bytes one step produces.
    static let stepSize = 64 * 1024

    private let coding: ContentCoding.Decoding
    private let maximumRatio: Int?
    private let decompressor: any StreamDecompressor
    private var started = false
    /// Whether the compressed data ended and no input followed yet.
    private var streamEnded = false
    /// The last call filled the step, so the library may hold decoded bytes it could not write yet, even with no
    /// input left (raw deflate ends without a trailer, so its last bytes can be read before they are decoded;
    /// brotli says so outright).
    private var holdsOutput = false
    private var pending = CircularBuffer<ByteBuffer>()
    private var pendingBytes = 0
    /// Compressed bytes received so far.
    private(set) var receivedBytes = 0
    /// Decoded bytes produced so far.
    private(set) var producedBytes = 0

    /// Creates a decoder.
    ///
    /// - Parameters:
    ///   - coding: The coding of the body.
    ///   - maximumRatio: Decoded bytes may be at most this many times the compressed bytes received; `nil` for
    ///     no limit.
    init(coding: ContentCoding.Decoding, maximumRatio: Int?) {
        self.coding = coding
        self.maximumRatio = maximumRatio
        switch coding {
        case .gzip, .deflate: decompressor = ContentInflater(coding: coding)
        case .brotli: decompressor = BrotliDecoder()
        }
    }

    /// Queues compressed bytes.
    func append(_ buffer: ByteBuffer) {
        guard buffer.readableBytes > 0 else { return }
        receivedBytes += buffer.readableBytes
        pendingBytes += buffer.readableBytes
        pending.append(buffer)
    }

    /// Whether a step can make progress with the input queued now.
    var canStep: Bool {
        if holdsOutput && !streamEnded { return true }
        if started { return pendingBytes > 0 }
        return pendingBytes > 0 && pendingBytes >= decompressor.bytesNeededToStart
    }

    /// Decodes queued input until it runs out or ``stepSize`` decoded bytes are ready.
    ///
    /// - Returns: The decoded bytes, possibly none (input that held only a header).
    /// - Throws: `cannotDecodeRawData` when the data is corrupt (Darwin's code for a body it cannot decode in a known
    ///   coding), `cannotDecodeContentData` when the decoded size passes the limit.
    func step(allocator: ByteBufferAllocator) throws(TransferError) -> ByteBuffer {
        var output = allocator.buffer(capacity: Self.stepSize)
        if !started {
            try decompressor.start(firstBytes: firstQueuedBytes(decompressor.bytesNeededToStart))
            started = true
        }
        while output.readableBytes < Self.stepSize {
            var input: ByteBuffer
            if let first = pending.first {
                if streamEnded { try startNextStream() }
                input = first
            } else if holdsOutput && !streamEnded {
                // The last call filled the step's output and the library may still hold decoded bytes.
                input = ByteBuffer()
            } else {
                break
            }
            let outcome = decompress(&input, into: &output)
            if !pending.isEmpty {
                let consumed = pending[pending.startIndex].readableBytes - input.readableBytes
                pendingBytes -= consumed
                if input.readableBytes == 0 {
                    pending.removeFirst()
                } else {
                    pending[pending.startIndex] = input
                }
            }
            switch outcome {
            case .needsInput:
                holdsOutput = false
            case .outputFull:
                holdsOutput = true
            case .ended:
                streamEnded = true
                holdsOutput = false
            case .corrupt(let reason):
                throw .cannotDecodeRawData("the \(coding) response body is corrupt (\(reason))")
            }
            if pending.isEmpty && !holdsOutput { break }
        }
        producedBytes += output.readableBytes
        try checkRatio()
        return output
    }

    /// Checks that the compressed data ended with the body.
    ///
    /// - Throws: `cannotDecodeRawData` when the body ended before its compressed data did.
    func finish() throws(TransferError) {
        if receivedBytes == 0 { return }  // an empty body is an empty body, whatever its coding
        guard streamEnded, pendingBytes == 0 else {
            throw .cannotDecodeRawData("the \(coding) response body ends before its compressed data does")
        }
    }

    // MARK: - Helpers

    private func startNextStream() throws(TransferError) {
        guard try decompressor.startNextStream() else {
            throw .cannotDecodeRawData(
                "the \(coding) response body has data after the end of its compressed data")
        }
        streamEnded = false
    }

    /// One library call from `input` into what is left of the step in `output`.
    private func decompress(_ input: inout ByteBuffer, into output: inout ByteBuffer) -> DecompressionStep.Outcome {
        var outcome = DecompressionStep.Outcome.needsInput
        let available = Self.stepSize - output.readableBytes
        input.readWithUnsafeReadableBytes { inputBytes in
            var consumed = 0
            output.writeWithUnsafeMutableBytes(minimumWritableBytes: available) { outputBytes in
                let space = UnsafeMutableRawBufferPointer(rebasing: outputBytes.prefix(available))
                let step = decompressor.decompress(inputBytes, into: space)
                consumed = step.consumed
                outcome = step.outcome
                return step.written
            }
            return consumed
        }
        return outcome
    }

    /// The first `count` queued bytes, across buffers.
    private func firstQueuedBytes(_ count: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        for buffer in pending where bytes.count < count {
            bytes += buffer.readableBytesView.prefix(count - bytes.count)
        }
        return bytes
    }

    /// The one decompression-bomb guard, for every coding.
    private func checkRatio() throws(TransferError) {
        guard let maximumRatio else { return }
        let (allowed, overflow) = receivedBytes.multipliedReportingOverflow(by: maximumRatio)
        guard !overflow, producedBytes > allowed else { return }
        throw .cannotDecodeContentData(
            "the \(coding) response body decodes to more than \(maximumRatio) times its compressed size "
                + "(\(producedBytes) bytes from \(receivedBytes)), which looks like a decompression bomb; "
                + "URLSessionConfiguration.courierMaximumDecompressionRatio sets the limit"
        )
    }
}
