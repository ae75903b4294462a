import CourierHTTP
import CourierMockServer
import Foundation
import NIOCore
import Testing

@testable import CourierTransport

@Suite("ContentInflater")
struct ContentInflaterTests {
    static let text = Array("hello gzip, hello deflate, hello raw deflate: the same words again and again\n".utf8)

    /// Inflates everything queued; each step's output must stay within a step.
    static func drain(_ inflater: ContentInflater) throws(TransferError) -> [UInt8] {
        var output: [UInt8] = []
        while inflater.canStep {
            let step = try inflater.step(allocator: ByteBufferAllocator())
            #expect(step.readableBytes <= ContentInflater.stepSize)
            output += step.readableBytesView
        }
        return output
    }

    static func decode(
        _ pieces: [[UInt8]],
        coding: ContentCoding.Decoding,
        ratio: Int? = ContentCoding.defaultMaximumDecompressionRatio
    ) throws(TransferError) -> [UInt8] {
        let inflater = ContentInflater(coding: coding, maximumRatio: ratio)
        var output: [UInt8] = []
        for piece in pieces {
            inflater.append(ByteBuffer(bytes: piece))
            output += try drain(inflater)
        }
        try inflater.finish()
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

    @Test(arguments: [
        (Deflater.Format.gzip, ContentCoding.Decoding.gzip), (.zlib, .deflate), (.raw, .deflate),
    ])
    func decodesEachFormat(format: Deflater.Format, coding: ContentCoding.Decoding) throws {
        #expect(try Self.decode([Deflater.compress(Self.text, as: format)], coding: coding) == Self.text)
        // An empty content, compressed, is an empty body.
        #expect(try Self.decode([Deflater.compress([], as: format)], coding: coding) == [])
        // A larger body than a step, with varied bytes.
        let large = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 / 1000) }
        #expect(try Self.decode([Deflater.compress(large, as: format)], coding: coding) == large)
    }

    @Test(arguments: [ContentCoding.Decoding.gzip, .deflate])
    func anEmptyBodyIsEmpty(coding: ContentCoding.Decoding) throws {
        #expect(try Self.decode([], coding: coding) == [])
        #expect(try Self.decode([[]], coding: coding) == [])
    }

    @Test(arguments: [
        (Deflater.Format.gzip, ContentCoding.Decoding.gzip), (.zlib, .deflate), (.raw, .deflate),
    ])
    func inputSplitAtEveryByteDecodesTheSame(format: Deflater.Format, coding: ContentCoding.Decoding) throws {
        let compressed = Deflater.compress(Self.text, as: format)
        for split in 0...compressed.count {
            let pieces = [Array(compressed[..<split]), Array(compressed[split...])]
            #expect(try Self.decode(pieces, coding: coding) == Self.text, "split at \(split)")
        }
        // And one byte at a time.
        #expect(try Self.decode(compressed.map { [$0] }, coding: coding) == Self.text)
    }

    @Test(arguments: [
        (Deflater.Format.gzip, ContentCoding.Decoding.gzip), (.zlib, .deflate), (.raw, .deflate),
    ])
    func trailingGarbageIsCannotDecodeContentData(format: Deflater.Format, coding: ContentCoding.Decoding) {
        let compressed = Deflater.compress(Self.text, as: format)
        #expect(Self.decodeError([compressed + Array("garbage".utf8)], coding: coding) == .cannotDecodeContentData)
        #expect(Self.decodeError([compressed, Array("garbage".utf8)], coding: coding) == .cannotDecodeContentData)
    }

    @Test(arguments: [
        (Deflater.Format.gzip, ContentCoding.Decoding.gzip), (.zlib, .deflate), (.raw, .deflate),
    ])
    func aTruncatedStreamIsCannotDecodeContentData(format: Deflater.Format, coding: ContentCoding.Decoding) {
        let compressed = Deflater.compress(Self.text, as: format)
        for cut in [1, compressed.count / 2, compressed.count - 1] {
            #expect(
                Self.decodeError([Array(compressed[..<cut])], coding: coding) == .cannotDecodeContentData, "cut \(cut)")
        }
    }

    @Test func corruptDataIsCannotDecodeContentData() {
        #expect(Self.decodeError([Array("not gzip".utf8)], coding: .gzip) == .cannotDecodeContentData)
        var compressed = Deflater.compress(Self.text, as: .gzip)
        compressed[compressed.count - 6] ^= 0xFF  // the CRC-32 in the trailer
        #expect(Self.decodeError([compressed], coding: .gzip) == .cannotDecodeContentData)
    }

    @Test func concatenatedGzipMembersAreDecodedInTurn() throws {
        let members = Deflater.compress(Array("one ".utf8), as: .gzip) + Deflater.compress(Array("two".utf8), as: .gzip)
        #expect(try Self.decode([members], coding: .gzip) == Array("one two".utf8))
    }

    @Test func oneStepProducesAtMostAStepAndKeepsTheRestOfTheInput() throws {
        let inflater = ContentInflater(coding: .gzip, maximumRatio: nil)
        inflater.append(ByteBuffer(bytes: Deflater.gzipZeros(count: 1 << 20)))
        let first = try inflater.step(allocator: ByteBufferAllocator())
        #expect(first.readableBytes == ContentInflater.stepSize)
        #expect(inflater.canStep)
        #expect(try Self.drain(inflater).count == (1 << 20) - ContentInflater.stepSize)
        try inflater.finish()
    }

    @Test func theRatioGuardStopsABombAndNilTurnsItOff() throws {
        let zeros = Deflater.gzipZeros(count: 4 << 20)  // about 1,030:1
        #expect(Self.decodeError([zeros], coding: .gzip, ratio: 100) == .cannotDecodeContentData)
        #expect(Self.decodeError([zeros], coding: .gzip) == .cannotDecodeContentData)
        #expect(try Self.decode([zeros], coding: .gzip, ratio: nil).count == 4 << 20)
        #expect(try Self.decode([zeros], coding: .gzip, ratio: 1_100).count == 4 << 20)
        // The guard trips before the output passes the limit by more than one step.
        let inflater = ContentInflater(coding: .gzip, maximumRatio: 10)
        inflater.append(ByteBuffer(bytes: zeros))
        var produced = 0
        do {
            while inflater.canStep { produced += try inflater.step(allocator: ByteBufferAllocator()).readableBytes }
            Issue.record("the guard did not trip")
        } catch {
            #expect(error.urlErrorCode == .cannotDecodeContentData)
            #expect(error.detail.contains("courierMaximumDecompressionRatio"))
        }
        #expect(produced <= 10 * zeros.count)
    }

    /// Raw deflate has no trailer: zlib can read a body's last bytes while the decoded bytes they stand for do not
    /// fit in the step, and then a body that is complete looked cut short.
    @Test(arguments: [65_536, 65_537, 65_600, 131_073, 200_001])
    func rawDeflateEndingInsideAFullStepDecodesWhole(size: Int) throws {
        let plain = [UInt8](repeating: UInt8(ascii: "a"), count: size)
        for format in [Deflater.Format.raw, .zlib] {
            let compressed = Deflater.compress(plain, as: format)
            #expect(try Self.decode([compressed], coding: .deflate, ratio: nil) == plain, "\(format) \(size)")
        }
        #expect(try Self.decode([Deflater.compress(plain, as: .gzip)], coding: .gzip, ratio: nil) == plain)
    }
}
