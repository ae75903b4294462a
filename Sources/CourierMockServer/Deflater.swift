import CCourierZlib

/// Compresses response bodies for scripted servers with the system zlib: gzip, zlib-wrapped deflate, or raw
/// deflate (serve the result with a matching `Content-Encoding`).
public final class Deflater {
    /// The compressed format.
    public enum Format: Sendable {
        /// gzip (RFC 1952), for `Content-Encoding: gzip`.
        case gzip
        /// zlib-wrapped deflate (RFC 1950), what `Content-Encoding: deflate` means.
        case zlib
        /// Raw deflate data (RFC 1951), which some servers send as `deflate`.
        case raw

        var windowBits: Int32 {
            switch self {
            case .gzip: return 15 + 16
            case .zlib: return 15
            case .raw: return -15
            }
        }
    }

    private let stream: UnsafeMutablePointer<z_stream>

    /// Starts a compressed stream.
    ///
    /// - Parameters:
    ///   - format: The format to write.
    ///   - level: zlib's compression level, 0 to 9.
    public init(_ format: Format, level: Int32 = 9) {
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        let result = CCourierZlib_deflateInit2(stream, level, format.windowBits)
        precondition(result == Z_OK, "deflateInit2 failed: \(result)")
    }

    deinit {
        deflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
    }

    /// Compresses `input`; with `finish`, ends the stream.
    public func compress(_ input: [UInt8], finish: Bool) -> [UInt8] {
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        var input = input
        input.withUnsafeMutableBufferPointer { inputBytes in
            stream.pointee.next_in = inputBytes.baseAddress
            stream.pointee.avail_in = UInt32(inputBytes.count)
            while true {
                let result = chunk.withUnsafeMutableBufferPointer { chunkBytes in
                    stream.pointee.next_out = chunkBytes.baseAddress
                    stream.pointee.avail_out = UInt32(chunkBytes.count)
                    return deflate(stream, finish ? Z_FINISH : Z_NO_FLUSH)
                }
                output += chunk[0..<(chunk.count - Int(stream.pointee.avail_out))]
                if finish ? result == Z_STREAM_END : stream.pointee.avail_out != 0 { break }
            }
            stream.pointee.next_in = nil
        }
        return output
    }

    /// `input` compressed in one go.
    public static func compress(_ input: [UInt8], as format: Format) -> [UInt8] {
        Deflater(format).compress(input, finish: true)
    }

    /// A gzip body of `count` zero bytes, compressed a megabyte at a time (never holding `count` bytes).
    public static func gzipZeros(count: Int) -> [UInt8] {
        let deflater = Deflater(.gzip)
        let megabyte = [UInt8](repeating: 0, count: 1 << 20)
        var output: [UInt8] = []
        var remaining = count
        while remaining > 0 {
            let size = min(remaining, megabyte.count)
            output += deflater.compress(size == megabyte.count ? megabyte : Array(megabyte[0..<size]), finish: false)
            remaining -= size
        }
        return output + deflater.compress([], finish: true)
    }
}
