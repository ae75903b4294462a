import CCourierBrotli
import CourierHTTP

/// Decodes a brotli body (RFC 7932, `Content-Encoding: br`) with the system libbrotli, for ``ContentDecoder``.
///
/// A brotli stream ends with an explicit last meta-block, so nothing may follow it, and libbrotli reports when it
/// holds decoded bytes that did not fit (`BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT`).
final class BrotliDecoder: StreamDecompressor {
    /// libbrotli's state, created in ``start(firstBytes:)``.
    private var state: OpaquePointer?

    deinit {
        if let state { BrotliDecoderDestroyInstance(state) }
    }

    var bytesNeededToStart: Int { 0 }

    func start(firstBytes: [UInt8]) throws(TransferError) {
        // nil allocators: libbrotli's own malloc and free.
        guard let created = BrotliDecoderCreateInstance(nil, nil, nil) else {
            throw .cannotDecodeContentData("cannot start decoding the brotli body (out of memory)")
        }
        state = created
    }

    func decompress(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> DecompressionStep {
        guard let state else { preconditionFailure("decompress(_:into:) before start(firstBytes:)") }
        // libbrotli never reads through an empty input's pointer, but wants one all the same.
        return withUnsafePointer(to: UInt8(0)) { placeholder in
            var nextIn: UnsafePointer<UInt8>? = input.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? placeholder
            var availableIn = input.count
            var nextOut = output.baseAddress?.assumingMemoryBound(to: UInt8.self)
            var availableOut = output.count
            let result = BrotliDecoderDecompressStream(state, &availableIn, &nextIn, &availableOut, &nextOut, nil)
            let consumed = input.count - availableIn
            let written = output.count - availableOut
            let outcome: DecompressionStep.Outcome
            switch result {
            case BROTLI_DECODER_RESULT_SUCCESS:
                outcome = .ended
            case BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT:
                outcome = .needsInput
            case BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT:
                outcome = .outputFull
            default:
                outcome = .corrupt(String(cString: BrotliDecoderErrorString(BrotliDecoderGetErrorCode(state))))
            }
            return DecompressionStep(consumed: consumed, written: written, outcome: outcome)
        }
    }

    /// A brotli stream is the whole body: bytes after its end are not another stream.
    func startNextStream() throws(TransferError) -> Bool { false }
}
