import CourierHTTP
import CourierMockServer
import Foundation
import NIOCore
import Testing

@testable import CourierTransport

@Suite("ContentInflater")
struct ContentInflaterTests {
    static let text = Array("hello gzip, hello deflate, hello raw deflate: the same words again and again\n".utf8)

    @Test(arguments: [
        (Deflater.Format.gzip, ContentCoding.Decoding.gzip), (.zlib, .deflate), (.raw, .deflate),
    ])
    func decodesEachFormat(format: Deflater.Format, coding: ContentCoding.Decoding) throws {
        #expect(try DecoderHarness.decode([Deflater.compress(Self.text, as: format)], coding: coding) == Self.text)
        // An empty content, compressed, is an empty body.
        #expect(try DecoderHarness.decode([Deflater.compress([], as: format)], coding: coding) == [])
        // A larger body than a step, with varied bytes.
        let large = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 / 1000) }
        #expect(try DecoderHarness.decode([Deflater.compress(large, as: format)], coding: coding) == large)
    }

    @Test(arguments: [ContentCoding.Decoding.gzip, .deflate])
    func anEmptyBodyIsEmpty(coding: ContentCoding.Decoding) throws {
        #expect(try DecoderHarness.decode([], coding: coding) == [])
        #expect(try DecoderHarness.decode([[]], coding: coding) == [])
    }

    @Test(arguments: [
        (Deflater.Format.gzip, ContentCoding.Decoding.gzip), (.zlib, .deflate), (.raw, .deflate),
    ])
    func inputSplitAtEveryByteDecodesTheSame(format: Deflater.Format, coding: ContentCoding.Decoding) throws {
        let compressed = Deflater.compress(Self.text, as: format)
        for split in 0...compressed.count {
            let pieces = [Array(compressed[..<split]), Array(compressed[split...])]
            #expect(try DecoderHarness.decode(pieces, coding: coding) == Self.text, "split at \(split)")
        }
        // And one byte at a time.
        #expect(try DecoderHarness.decode(compressed.map { [$0] }, coding: coding) == Self.text)
    }

    @Test(arguments: [
        (Deflater.Format.gzip, ContentCoding.Decoding.gzip), (.zlib, .deflate), (.raw, .deflate),
    ])
    func trailingGarbageIsCannotDecodeContentData(format: Deflater.Format, coding: ContentCoding.Decoding) {
        let compressed = Deflater.compress(Self.text, as: format)
        let garbage = Array("garbage".utf8)
        #expect(DecoderHarness.decodeError([compressed + garbage], coding: coding) == .cannotDecodeRawData)
        #expect(DecoderHarness.decodeError([compressed, garbage], coding: coding) == .cannotDecodeRawData)
    }

    @Test(arguments: [
        (Deflater.Format.gzip, ContentCoding.Decoding.gzip), (.zlib, .deflate), (.raw, .deflate),
    ])
    func aTruncatedStreamIsCannotDecodeContentData(format: Deflater.Format, coding: ContentCoding.Decoding) {
        let compressed = Deflater.compress(Self.text, as: format)
        for cut in [1, compressed.count / 2, compressed.count - 1] {
            #expect(
                DecoderHarness.decodeError([Array(compressed[..<cut])], coding: coding) == .cannotDecodeRawData,
                "cut \(cut)")
        }
    }

    @Test func corruptDataIsCannotDecodeRawData() {
        #expect(DecoderHarness.decodeError([Array("not gzip".utf8)], coding: .gzip) == .cannotDecodeRawData)
        var compressed = Deflater.compress(Self.text, as: .gzip)
        compressed[compressed.count - 6] ^= 0xFF  // the CRC-32 in the trailer
        #expect(DecoderHarness.decodeError([compressed], coding: .gzip) == .cannotDecodeRawData)
    }

    @Test func concatenatedGzipMembersAreDecodedInTurn() throws {
        let members = Deflater.compress(Array("one ".utf8), as: .gzip) + Deflater.compress(Array("two".utf8), as: .gzip)
        #expect(try DecoderHarness.decode([members], coding: .gzip) == Array("one two".utf8))
    }

    @Test func oneStepProducesAtMostAStepAndKeepsTheRestOfTheInput() throws {
        let inflater = ContentDecoder(coding: .gzip, maximumRatio: nil)
        inflater.append(ByteBuffer(bytes: Deflater.gzipZeros(count: 1 << 20)))
        let first = try inflater.step(allocator: ByteBufferAllocator())
        #expect(first.readableBytes == ContentDecoder.stepSize)
        #expect(inflater.canStep)
        #expect(try DecoderHarness.drain(inflater).count == (1 << 20) - ContentDecoder.stepSize)
        try inflater.finish()
    }

    @Test func theRatioGuardStopsABombAndNilTurnsItOff() throws {
        let zeros = Deflater.gzipZeros(count: 4 << 20)  // about 1,030:1
        #expect(DecoderHarness.decodeError([zeros], coding: .gzip, ratio: 100) == .cannotDecodeContentData)
        #expect(DecoderHarness.decodeError([zeros], coding: .gzip) == .cannotDecodeContentData)
        #expect(try DecoderHarness.decode([zeros], coding: .gzip, ratio: nil).count == 4 << 20)
        #expect(try DecoderHarness.decode([zeros], coding: .gzip, ratio: 1_100).count == 4 << 20)
        // The guard trips before the output passes the limit by more than one step.
        let inflater = ContentDecoder(coding: .gzip, maximumRatio: 10)
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
            #expect(try DecoderHarness.decode([compressed], coding: .deflate, ratio: nil) == plain, "\(format) \(size)")
        }
        #expect(try DecoderHarness.decode([Deflater.compress(plain, as: .gzip)], coding: .gzip, ratio: nil) == plain)
    }
}
