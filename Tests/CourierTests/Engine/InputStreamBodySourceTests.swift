import CourierHTTP
import CourierTransport
import Foundation
import NIOCore
import Testing

@testable import Courier

/// A request body read from an `InputStream` on a queue of its own, through both ways the transport reads: a Swift
/// task (`read(maxLength:)`) and a future on an event loop (`read(maxLength:on:)`, what the HTTP/1 writer uses).
@Suite("Input stream request bodies")
struct InputStreamBodySourceTests {
    /// A stream whose every read answers `result` (after filling what it was given room for, when positive).
    private final class FixedResultStream: InputStream {
        private let result: Int

        init(result: Int) {
            self.result = result
            super.init(data: Data())
        }

        override var streamStatus: Stream.Status { .open }
        override var streamError: (any Error)? { nil }
        override func open() {}
        override func close() {}
        override var hasBytesAvailable: Bool { true }
        override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength len: Int) -> Int {
            if result > 0 { buffer.update(repeating: 1, count: len) }
            return result
        }
    }

    private func makeSource(_ stream: InputStream) -> InputStreamBodySource {
        InputStreamBodySource(initialStream: stream, newStream: { nil })
    }

    @Test(arguments: BodyReadPath.allCases)
    func theStreamComesInChunksThenTheEnd(path: BodyReadPath) async throws {
        let chunk = 64 * 1024
        let bytes = (0..<(2 * chunk + 7)).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        let reader = try await makeSource(InputStream(data: Data(bytes))).makeReader()
        defer { reader.close() }
        let (sizes, capacities, read) = try await path.readAll(reader, chunk: chunk)
        #expect(sizes == [chunk, chunk, 7])
        // The short last part does not keep a whole chunk's storage alive while it waits to be written.
        #expect(capacities.last.map { $0 < chunk / 2 } == true)
        let sameBytes = read == bytes
        #expect(sameBytes)
        #expect(try await path.read(reader, maxLength: chunk) == nil)
    }

    /// A read that fails (-1), and one that claims more bytes than it was given room for (it used to be taken at its
    /// word, past the end of the buffer), are both `requestBodyStreamExhausted`.
    @Test(arguments: BodyReadPath.allCases, [-1, 1025])
    func aBadReadIsRequestBodyStreamExhausted(path: BodyReadPath, result: Int) async throws {
        let reader = try await makeSource(FixedResultStream(result: result)).makeReader()
        defer { reader.close() }
        await #expect {
            _ = try await path.read(reader, maxLength: 1024)
        } throws: { error in
            (error as? TransferError)?.urlErrorCode == .requestBodyStreamExhausted
        }
    }

    @Test func withoutAStreamTheSecondPassFails() async throws {
        let source = makeSource(InputStream(data: Data("once".utf8)))
        let first = try await source.makeReader()
        #expect(try await first.read(maxLength: 16).map { String(buffer: $0) } == "once")
        first.close()
        await #expect {
            _ = try await source.makeReader()
        } throws: { error in
            (error as? TransferError)?.urlErrorCode == .requestBodyStreamExhausted
        }
    }
}
