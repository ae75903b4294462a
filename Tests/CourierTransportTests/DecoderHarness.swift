import CourierHTTP
import Foundation
import NIOCore
import Testing

@testable import CourierTransport

/// Runs a ``ContentDecoder`` over a body given in pieces, as the HTTP/1 handler feeds it, for every coding's tests.
enum DecoderHarness {
    /// Decodes everything queued; each step's output must stay within a step.
    static func drain(_ decoder: ContentDecoder) throws(TransferError) -> [UInt8] {
        var output: [UInt8] = []
        while decoder.canStep {
            let step = try decoder.step(allocator: ByteBufferAllocator())
            #expect(step.readableBytes <= ContentDecoder.stepSize)
            output += step.readableBytesView
        }
        return output
    }

    static func decode(
        _ pieces: [[UInt8]],
        coding: ContentCoding.Decoding,
        ratio: Int? = ContentCoding.defaultMaximumDecompressionRatio
    ) throws(TransferError) -> [UInt8] {
        let decoder = ContentDecoder(coding: coding, maximumRatio: ratio)
        var output: [UInt8] = []
        for piece in pieces {
            decoder.append(ByteBuffer(bytes: piece))
            output += try drain(decoder)
        }
        try decoder.finish()
        return output
    }

    static func decodeError(
        _ pieces: [[UInt8]], coding: ContentCoding.Decoding,
        ratio: Int? = ContentCoding.defaultMaximumDecompressionRatio
    ) -> URLError.Code? {
        do {
            _ = try decode(pieces, coding: coding, ratio: ratio)
            return nil
        } catch {
            return error.urlErrorCode
        }
    }
}
