import CCourierZlib
import CourierHTTP

/// Inflates a gzip or deflate body with the system zlib, for ``ContentDecoder``.
///
/// deflate accepts the zlib format and, when the body does not start with a zlib header, raw deflate data (as
/// browsers do). Concatenated gzip members are decoded one after the other (RFC 1952 §2.2).
///
/// A class, not a value: zlib keeps the address of its stream, which must therefore never move.
final class ContentInflater: StreamDecompressor {
    private let coding: ContentCoding.Decoding
    private let stream: UnsafeMutablePointer<z_stream>
    private var initialized = false

    /// Creates an inflater for `coding`, gzip or deflate.
    init(coding: ContentCoding.Decoding) {
        precondition(coding == .gzip || coding == .deflate, "zlib decodes gzip and deflate, not \(coding)")
        self.coding = coding
        self.stream = .allocate(capacity: 1)
        self.stream.initialize(to: z_stream())
    }

    deinit {
        if initialized { inflateEnd(stream) }
        stream.deinitialize(count: 1)
        stream.deallocate()
    }

    /// deflate: the first two bytes tell the zlib format from raw deflate data.
    var bytesNeededToStart: Int { coding == .deflate ? 2 : 0 }

    func start(firstBytes: [UInt8]) throws(TransferError) {
        let windowBits: Int32
        if coding == .gzip {
            windowBits = 15 + 16
        } else {
            windowBits = Self.isZlibHeader(firstBytes) ? 15 : -15
        }
        let result = CCourierZlib_inflateInit2(stream, windowBits)
        guard result == Z_OK else {
            throw .cannotDecodeContentData("cannot start decoding the \(coding) body (\(zlibMessage(result)))")
        }
        initialized = true
    }

    func decompress(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> DecompressionStep {
        stream.pointee.next_in = UnsafeMutablePointer(
            mutating: input.baseAddress?.assumingMemoryBound(to: Bytef.self))
        stream.pointee.avail_in = UInt32(input.count)
        stream.pointee.next_out = output.baseAddress?.assumingMemoryBound(to: Bytef.self)
        stream.pointee.avail_out = UInt32(output.count)
        let result = inflate(stream, Z_NO_FLUSH)
        let consumed = input.count - Int(stream.pointee.avail_in)
        let written = output.count - Int(stream.pointee.avail_out)
        // zlib must not keep pointers into buffers it does not own past this call.
        stream.pointee.next_in = nil
        stream.pointee.avail_in = 0
        stream.pointee.next_out = nil
        stream.pointee.avail_out = 0
        switch result {
        case Z_OK, Z_BUF_ERROR:
            // A full output may leave decoded bytes inside zlib; otherwise it read all it was given.
            let outcome: DecompressionStep.Outcome = written == output.count ? .outputFull : .needsInput
            return DecompressionStep(consumed: consumed, written: written, outcome: outcome)
        case Z_STREAM_END:
            return DecompressionStep(consumed: consumed, written: written, outcome: .ended)
        default:
            return DecompressionStep(consumed: consumed, written: written, outcome: .corrupt(zlibMessage(result)))
        }
    }

    /// After a gzip member, another may follow; after deflate data, nothing may.
    func startNextStream() throws(TransferError) -> Bool {
        guard coding == .gzip else { return false }
        let result = inflateReset(stream)
        guard result == Z_OK else {
            throw .cannotDecodeContentData("cannot continue decoding the gzip body (\(zlibMessage(result)))")
        }
        return true
    }

    private func zlibMessage(_ result: Int32) -> String {
        if let message = stream.pointee.msg { return String(cString: message) }
        return "zlib error \(result)"
    }

    /// Whether two bytes are a zlib header (RFC 1950 §2.2: method 8, window ≤ 32 KiB, check bits).
    private static func isZlibHeader(_ bytes: [UInt8]) -> Bool {
        guard bytes.count == 2 else { return false }
        let cmf = bytes[0]
        let flg = bytes[1]
        return cmf & 0x0F == 8 && cmf >> 4 <= 7 && (UInt16(cmf) << 8 | UInt16(flg)) % 31 == 0
    }
}
