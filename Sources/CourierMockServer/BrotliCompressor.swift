import CCourierBrotliEncoder

/// Compresses response bodies for scripted servers with the system libbrotli (serve the result with
/// `Content-Encoding: br`).
public final class BrotliCompressor {
    private let state: OpaquePointer

    /// Starts a compressed stream.
    ///
    /// - Parameters:
    ///   - quality: libbrotli's quality, 0 (fastest) to 11 (smallest); servers compressing on the fly use 4 to 6.
    ///   - windowBits: The base-2 logarithm of the window size, 10 to 24.
    public init(quality: UInt32 = 5, windowBits: UInt32 = 22) {
        guard let created = BrotliEncoderCreateInstance(nil, nil, nil) else {
            preconditionFailure("BrotliEncoderCreateInstance failed")
        }
        state = created
        let set =
            BrotliEncoderSetParameter(state, BROTLI_PARAM_QUALITY, quality) != 0
            && BrotliEncoderSetParameter(state, BROTLI_PARAM_LGWIN, windowBits) != 0
        precondition(set, "brotli rejected quality \(quality) or window \(windowBits)")
    }

    deinit {
        BrotliEncoderDestroyInstance(state)
    }

    /// Compresses `input`; with `finish`, ends the stream.
    public func compress(_ input: [UInt8], finish: Bool) -> [UInt8] {
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        input.withUnsafeBufferPointer { inputBytes in
            var nextIn = inputBytes.baseAddress
            var availableIn = inputBytes.count
            let operation = finish ? BROTLI_OPERATION_FINISH : BROTLI_OPERATION_PROCESS
            while true {
                let written = chunk.withUnsafeMutableBufferPointer { chunkBytes in
                    var nextOut = chunkBytes.baseAddress
                    var availableOut = chunkBytes.count
                    let result = BrotliEncoderCompressStream(
                        state, operation, &availableIn, &nextIn, &availableOut, &nextOut, nil)
                    precondition(result != 0, "BrotliEncoderCompressStream failed")
                    return chunkBytes.count - availableOut
                }
                output += chunk[0..<written]
                // Done once the input is read and nothing waits inside the encoder (and, to finish, it finished).
                let drained = availableIn == 0 && BrotliEncoderHasMoreOutput(state) == 0
                if drained && (!finish || BrotliEncoderIsFinished(state) != 0) { break }
            }
        }
        return output
    }

    /// `input` compressed in one go.
    public static func compress(_ input: [UInt8], quality: UInt32 = 5) -> [UInt8] {
        BrotliCompressor(quality: quality).compress(input, finish: true)
    }

    /// A brotli body of `count` zero bytes, compressed a megabyte at a time (never holding `count` bytes).
    public static func zeros(count: Int) -> [UInt8] {
        let compressor = BrotliCompressor()
        let megabyte = [UInt8](repeating: 0, count: 1 << 20)
        var output: [UInt8] = []
        var remaining = count
        while remaining > 0 {
            let size = min(remaining, megabyte.count)
            output += compressor.compress(size == megabyte.count ? megabyte : Array(megabyte[0..<size]), finish: false)
            remaining -= size
        }
        return output + compressor.compress([], finish: true)
    }
}
