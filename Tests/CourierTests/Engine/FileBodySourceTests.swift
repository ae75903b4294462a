import CourierHTTP
import CourierTransport
import Foundation
import NIOCore
import NIOPosix
import Testing

@testable import Courier

/// An upload's file, read in chunks off the event loops: each test runs through both ways the transport reads, a Swift
/// task (`read(maxLength:)`) and a future on an event loop (`read(maxLength:on:)`, what the HTTP/1 writer uses).
@Suite("File request bodies")
struct FileBodySourceTests {
    enum ReadPath: CaseIterable, Sendable {
        case task
        case eventLoop
    }

    private func readChunk(_ reader: any TransportBodyReader, maxLength: Int, via path: ReadPath) async throws
        -> ByteBuffer?
    {
        switch path {
        case .task:
            return try await reader.read(maxLength: maxLength)
        case .eventLoop:
            let direct = try #require(reader as? any EventLoopBodyReader)
            let eventLoop = MultiThreadedEventLoopGroup.singleton.next()
            return try await direct.read(maxLength: maxLength, on: eventLoop).map { chunk in
                #expect(eventLoop.inEventLoop)
                return chunk
            }.get()
        }
    }
    private func makeFile(_ bytes: [UInt8]) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("courier-body-\(UUID().uuidString)")
        try Data(bytes).write(to: url)
        return url
    }

    @Test(arguments: ReadPath.allCases)
    func theFileComesInFullChunksThenTheEnd(path: ReadPath) async throws {
        let chunk = 64 * 1024
        let bytes = (0..<(3 * chunk + 5)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let url = try makeFile(bytes)
        defer { try? FileManager.default.removeItem(at: url) }
        let reader = try await FileBodySource(url: url).makeReader()
        defer { reader.close() }
        var sizes: [Int] = []
        var capacities: [Int] = []
        var read: [UInt8] = []
        while let buffer = try await readChunk(reader, maxLength: chunk, via: path) {
            sizes.append(buffer.readableBytes)
            capacities.append(buffer.capacity)
            read += buffer.readableBytesView
        }
        #expect(sizes == [chunk, chunk, chunk, 5])
        // The short last chunk does not keep a whole chunk's storage alive while it waits to be written.
        #expect(capacities.last.map { $0 < chunk / 2 } == true)
        // Compared as one Boolean: a failure should not print two 192 KiB arrays.
        let sameBytes = read == bytes
        #expect(sameBytes)
        // Past the end it stays at the end.
        #expect(try await readChunk(reader, maxLength: chunk, via: path) == nil)
    }

    @Test(arguments: ReadPath.allCases)
    func eachPassStartsAtTheBeginning(path: ReadPath) async throws {
        let url = try makeFile(Array("first pass, second pass".utf8))
        defer { try? FileManager.default.removeItem(at: url) }
        let source = FileBodySource(url: url)
        for _ in 0..<2 {
            let reader = try await source.makeReader()
            let buffer = try #require(try await readChunk(reader, maxLength: 1024, via: path))
            #expect(String(buffer: buffer) == "first pass, second pass")
            reader.close()
            // Closing twice is harmless.
            reader.close()
        }
    }

    @Test(arguments: ReadPath.allCases)
    func aReadAfterCloseFailsInsteadOfReadingAReusedDescriptor(path: ReadPath) async throws {
        let url = try makeFile(Array("contents".utf8))
        defer { try? FileManager.default.removeItem(at: url) }
        let reader = try await FileBodySource(url: url).makeReader()
        reader.close()
        // Another file may now have the closed descriptor's number; the reader must not read it.
        let other = try makeFile(Array("another file".utf8))
        defer { try? FileManager.default.removeItem(at: other) }
        let handle = try FileHandle(forReadingFrom: other)
        defer { try? handle.close() }
        await #expect {
            _ = try await readChunk(reader, maxLength: 1024, via: path)
        } throws: { error in
            (error as? TransferError)?.urlErrorCode == .cannotOpenFile
        }
    }

    @Test(arguments: ReadPath.allCases)
    func aCloseDuringAReadWaitsForTheRead(path: ReadPath) async throws {
        let bytes = [UInt8](repeating: 7, count: 256 * 1024)
        let url = try makeFile(bytes)
        defer { try? FileManager.default.removeItem(at: url) }
        let reader = try await FileBodySource(url: url).makeReader()
        async let chunk = readChunk(reader, maxLength: bytes.count, via: path)
        reader.close()
        // Whether the close came before the read started (the read fails) or during it (the read completes on the
        // open descriptor), the read never sees a closed descriptor: no EBADF, no short garbage.
        do {
            let buffer = try await chunk
            let sameBytes = buffer.map { Array($0.readableBytesView) == bytes } ?? false
            #expect(sameBytes)
        } catch {
            #expect((error as? TransferError)?.description.contains("closed") == true)
        }
        await #expect(throws: TransferError.self) { _ = try await readChunk(reader, maxLength: 16, via: path) }
    }

    @Test func aFileThatWentAwayIsCannotOpenFile() async throws {
        let url = try makeFile([1, 2, 3])
        let source = FileBodySource(url: url)
        try FileManager.default.removeItem(at: url)
        await #expect {
            _ = try await source.makeReader()
        } throws: { error in
            (error as? TransferError)?.urlErrorCode == .cannotOpenFile
        }
    }
}
