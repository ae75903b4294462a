import CCourierZlib
import CourierHTTP
import NIOCore

/// Inflates a gzip or deflate response body in bounded steps, so the consumer's demand decides how much
/// decoded data exists at any time.
///
/// Compressed input is queued with ``append(_:)``; each ``step(allocator:)`` produces at most ``stepSize``
/// decoded bytes and keeps what it did not consume for the next step. deflate accepts the zlib format and, when
/// the body does not start with a zlib header, raw deflate data (as browsers do). Concatenated gzip members are
/// decoded one after the other (RFC 1952 §2.2); other bytes after the end of the compressed data are an error,
/// and so is a body that ends before its compressed data does.
///
/// A class, not a value: zlib keeps the address of its stream, which must therefore never move.
/// Lives on one event loop; not thread-safe.
final class ContentInflater {
    /// The most decoded bytes one step produces.
    static let stepSize = 64 * 1024

    private let coding: ContentCoding.Decoding
    private let maximumRatio: Int?
    private let stream: UnsafeMutablePointer<z_stream>
    private var initialized = false
    /// Whether the compressed data ended (zlib reported the end of the stream) and no input followed yet.
    private var streamEnded = false
    /// The last inflate filled a whole step, so zlib may hold decoded bytes it could not write yet, even with no
    /// input left (raw deflate ends without a trailer, so its last bytes can be read before they are decoded).
    private var holdsOutput = false
    private var pending = CircularBuffer<ByteBuffer>()
    private var pendingBytes = 0
    /// Compressed bytes received so far.
    private(set) var receivedBytes = 0
    /// Decoded bytes produced so far.
    private(set) var producedBytes = 0

    /// Creates an inflater.
    ///
    /// - Parameters:
    ///   - coding: The coding of the body.
    ///   - maximumRatio: Decoded bytes may be at most this many times the compressed bytes received; `nil` for
    ///     no limit.
    init(coding: ContentCoding.Decoding, maximumRatio: Int?) {
        self.coding = coding
        self.maximumRatio = maximumRatio
        self.stream = .allocate(capacity: 1)
        self.stream.initialize(to: z_stream())
    }

    deinit {
        if initialized { inflateEnd(stream) }
        stream.deinitialize(count: 1)
        stream.deallocate()
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
        if initialized || coding == .gzip { return pendingBytes > 0 }
        // deflate: the first two bytes tell the zlib format from raw deflate data.
        return pendingBytes >= 2
    }

    /// Inflates queued input until it runs out or ``stepSize`` decoded bytes are ready.
    ///
    /// - Returns: The decoded bytes, possibly none (input that held only a header).
    /// - Throws: `cannotDecodeContentData` when the data is corrupt or the decoded size passes the limit.
    func step(allocator: ByteBufferAllocator) throws(TransferError) -> ByteBuffer {
        var output = allocator.buffer(capacity: Self.stepSize)
        if !initialized { try initialize() }
        while output.readableBytes < Self.stepSize {
            var input: ByteBuffer
            if let first = pending.first {
                if streamEnded { try startNextMember() }
                input = first
            } else if holdsOutput && !streamEnded {
                // zlib filled the last step's output and may still hold decoded bytes with no input left to read.
                input = ByteBuffer()
            } else {
                break
            }
            let before = output.readableBytes
            let result = inflate(&input, into: &output)
            if !pending.isEmpty {
                let consumed = pending[pending.startIndex].readableBytes - input.readableBytes
                pendingBytes -= consumed
                if input.readableBytes == 0 {
                    pending.removeFirst()
                } else {
                    pending[pending.startIndex] = input
                }
            }
            holdsOutput = output.readableBytes == Self.stepSize
            switch result {
            case Z_OK, Z_BUF_ERROR:
                // Nothing to read and nothing more to write: zlib is waiting for input.
                if pending.isEmpty && output.readableBytes == before { holdsOutput = false }
            case Z_STREAM_END:
                streamEnded = true
                holdsOutput = false
            default:
                throw .cannotDecodeContentData("the \(coding) response body is corrupt (\(zlibMessage(result)))")
            }
            if pending.isEmpty && !holdsOutput { break }
        }
        producedBytes += output.readableBytes
        try checkRatio()
        return output
    }

    /// Checks that the compressed data ended with the body.
    ///
    /// - Throws: `cannotDecodeContentData` when the body ended before its compressed data did.
    func finish() throws(TransferError) {
        if receivedBytes == 0 { return }  // an empty body is an empty body, whatever its coding
        guard streamEnded, pendingBytes == 0 else {
            throw .cannotDecodeContentData("the \(coding) response body ends before its compressed data does")
        }
    }

    // MARK: - zlib

    private func initialize() throws(TransferError) {
        let windowBits: Int32
        switch coding {
        case .gzip:
            windowBits = 15 + 16
        case .deflate:
            windowBits = Self.startsWithZlibHeader(pending) ? 15 : -15
        }
        let result = CCourierZlib_inflateInit2(stream, windowBits)
        guard result == Z_OK else {
            throw .cannotDecodeContentData("cannot start decoding the \(coding) body (\(zlibMessage(result)))")
        }
        initialized = true
    }

    /// After the end of a gzip member, more input must be another member; after deflate data, nothing may follow.
    private func startNextMember() throws(TransferError) {
        guard coding == .gzip else {
            throw .cannotDecodeContentData("the deflate response body has data after the end of its compressed data")
        }
        let result = inflateReset(stream)
        guard result == Z_OK else {
            throw .cannotDecodeContentData("cannot continue decoding the gzip body (\(zlibMessage(result)))")
        }
        streamEnded = false
    }

    private func inflate(_ input: inout ByteBuffer, into output: inout ByteBuffer) -> Int32 {
        var result = Z_OK
        input.readWithUnsafeMutableReadableBytes { inputBytes in
            let available = Self.stepSize - output.readableBytes
            output.writeWithUnsafeMutableBytes(minimumWritableBytes: 0) { outputBytes in
                let outputCount = min(available, outputBytes.count)
                stream.pointee.next_in = inputBytes.baseAddress?.assumingMemoryBound(to: Bytef.self)
                stream.pointee.avail_in = UInt32(inputBytes.count)
                stream.pointee.next_out = outputBytes.baseAddress?.assumingMemoryBound(to: Bytef.self)
                stream.pointee.avail_out = UInt32(outputCount)
                result = CCourierZlib.inflate(stream, Z_NO_FLUSH)
                let written = outputCount - Int(stream.pointee.avail_out)
                stream.pointee.next_out = nil
                stream.pointee.avail_out = 0
                return written
            }
            let consumed = inputBytes.count - Int(stream.pointee.avail_in)
            stream.pointee.next_in = nil
            stream.pointee.avail_in = 0
            return consumed
        }
        return result
    }

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

    private func zlibMessage(_ result: Int32) -> String {
        if let message = stream.pointee.msg { return String(cString: message) }
        return "zlib error \(result)"
    }

    /// Whether the first two queued bytes are a zlib header (RFC 1950 §2.2: method 8, window ≤ 32 KiB, check
    /// bits).
    private static func startsWithZlibHeader(_ pending: CircularBuffer<ByteBuffer>) -> Bool {
        var bytes: [UInt8] = []
        for buffer in pending where bytes.count < 2 {
            bytes += buffer.readableBytesView.prefix(2 - bytes.count)
        }
        guard bytes.count == 2 else { return false }
        let cmf = bytes[0]
        let flg = bytes[1]
        return cmf & 0x0F == 8 && cmf >> 4 <= 7 && (UInt16(cmf) << 8 | UInt16(flg)) % 31 == 0
    }
}
