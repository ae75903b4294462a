import CourierHTTP
import CourierMockServer
import Foundation
import NIOCore
import Testing

@testable import CourierTransport

@Suite("BrotliDecoder")
struct BrotliDecoderTests {
    static let text = Array("hello brotli, hello br: the same words again and again, and once more again\n".utf8)

    /// Every quality level the encoder has (0 and 1 use their own fast paths, 10 and 11 the slow optimal one), and
    /// the smallest and largest standard windows.
    @Test(arguments: [
        (UInt32(0), UInt32(22)), (1, 22), (5, 22), (9, 22), (11, 22), (5, 10), (11, 24),
    ])
    func decodesEachQualityAndWindow(quality: UInt32, windowBits: UInt32) throws {
        func compressed(_ input: [UInt8]) -> [UInt8] {
            BrotliCompressor(quality: quality, windowBits: windowBits).compress(input, finish: true)
        }
        #expect(try DecoderHarness.decode([compressed(Self.text)], coding: .brotli) == Self.text)
        // An empty content, compressed, is an empty body.
        #expect(try DecoderHarness.decode([compressed([])], coding: .brotli) == [])
        // A larger body than a step, with varied bytes.
        let large = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 / 1000) }
        #expect(try DecoderHarness.decode([compressed(large)], coding: .brotli) == large)
    }

    @Test func anEmptyBodyIsEmpty() throws {
        #expect(try DecoderHarness.decode([], coding: .brotli) == [])
        #expect(try DecoderHarness.decode([[]], coding: .brotli) == [])
    }

    @Test func inputSplitAtEveryByteDecodesTheSame() throws {
        let compressed = BrotliCompressor.compress(Self.text, quality: 11)
        for split in 0...compressed.count {
            let pieces = [Array(compressed[..<split]), Array(compressed[split...])]
            #expect(try DecoderHarness.decode(pieces, coding: .brotli) == Self.text, "split at \(split)")
        }
        // And one byte at a time.
        #expect(try DecoderHarness.decode(compressed.map { [$0] }, coding: .brotli) == Self.text)
    }

    @Test func trailingGarbageIsCannotDecodeContentData() {
        let compressed = BrotliCompressor.compress(Self.text)
        let garbage = Array("garbage".utf8)
        #expect(DecoderHarness.decodeError([compressed + garbage], coding: .brotli) == .cannotDecodeRawData)
        #expect(DecoderHarness.decodeError([compressed, garbage], coding: .brotli) == .cannotDecodeRawData)
        // A second brotli stream is garbage too: unlike gzip members, brotli streams do not concatenate.
        let twice = [compressed, compressed]
        #expect(DecoderHarness.decodeError(twice, coding: .brotli) == .cannotDecodeRawData)
    }

    @Test func aTruncatedStreamIsCannotDecodeContentData() {
        let compressed = BrotliCompressor.compress(Self.text)
        for cut in [1, compressed.count / 2, compressed.count - 1] {
            #expect(
                DecoderHarness.decodeError([Array(compressed[..<cut])], coding: .brotli) == .cannotDecodeRawData,
                "cut \(cut)")
        }
    }

    @Test func corruptDataIsCannotDecodeContentData() throws {
        // Brotli has no checksum, so only data that breaks its grammar is detectably corrupt: here a window size
        // the format reserves (the first byte's low bits 0010001), and a gzip body sent as br.
        #expect(DecoderHarness.decodeError([[0x11, 0x00, 0x00, 0x00]], coding: .brotli) == .cannotDecodeRawData)
        let gzip = Deflater.compress(Self.text, as: .gzip)
        #expect(DecoderHarness.decodeError([gzip], coding: .brotli) == .cannotDecodeRawData)
        // The detail names the coding and libbrotli's reason.
        do {
            _ = try DecoderHarness.decode([[0x11, 0x00, 0x00, 0x00]], coding: .brotli)
            Issue.record("corrupt data decoded")
        } catch {
            #expect(error.detail.hasPrefix("the brotli response body is corrupt ("), "\(error.detail)")
            #expect(error.detail.contains("WINDOW_BITS"), "\(error.detail)")
        }
    }

    /// A brotli body of zeros is tiny, so libbrotli reads all of it in the first step and then holds decoded bytes
    /// with no input left: the steps must go on until it says it is done.
    @Test func oneStepProducesAtMostAStepAndTheHeldOutputFollows() throws {
        let decoder = ContentDecoder(coding: .brotli, maximumRatio: nil)
        decoder.append(ByteBuffer(bytes: BrotliCompressor.zeros(count: 1 << 20)))
        let first = try decoder.step(allocator: ByteBufferAllocator())
        #expect(first.readableBytes == ContentDecoder.stepSize)
        #expect(decoder.canStep)
        #expect(try DecoderHarness.drain(decoder).count == (1 << 20) - ContentDecoder.stepSize)
        #expect(!decoder.canStep)
        try decoder.finish()
    }

    /// Bodies whose end falls at or just past a step boundary, where the decoder holds output at the end.
    @Test(arguments: [65_535, 65_536, 65_537, 131_072, 131_073, 200_001])
    func aBodyEndingAroundAStepBoundaryDecodesWhole(size: Int) throws {
        let plain = (0..<size).map { UInt8(truncatingIfNeeded: $0 % 251) }
        for quality: UInt32 in [1, 11] {
            let compressed = BrotliCompressor(quality: quality).compress(plain, finish: true)
            #expect(try DecoderHarness.decode([compressed], coding: .brotli, ratio: nil) == plain, "q\(quality)")
        }
    }

    @Test func theRatioGuardStopsABombAndNilTurnsItOff() throws {
        let size = 4 << 20
        let zeros = BrotliCompressor.zeros(count: size)
        // Far beyond what deflate can reach: brotli encodes long repeats in next to nothing.
        #expect(zeros.count * 10_000 < size)
        #expect(DecoderHarness.decodeError([zeros], coding: .brotli) == .cannotDecodeContentData)
        #expect(DecoderHarness.decodeError([zeros], coding: .brotli, ratio: 100) == .cannotDecodeContentData)
        #expect(try DecoderHarness.decode([zeros], coding: .brotli, ratio: nil) == [UInt8](repeating: 0, count: size))
        #expect(try DecoderHarness.decode([zeros], coding: .brotli, ratio: size).count == size)
        // The guard trips before the output passes the limit by more than one step.
        let decoder = ContentDecoder(coding: .brotli, maximumRatio: 1_000)
        decoder.append(ByteBuffer(bytes: zeros))
        var produced = 0
        do {
            while decoder.canStep { produced += try decoder.step(allocator: ByteBufferAllocator()).readableBytes }
            Issue.record("the guard did not trip")
        } catch {
            #expect(error.urlErrorCode == .cannotDecodeContentData)
            #expect(error.detail.contains("brotli"))
            #expect(error.detail.contains("courierMaximumDecompressionRatio"))
        }
        #expect(produced <= 1_000 * zeros.count)
    }
}
