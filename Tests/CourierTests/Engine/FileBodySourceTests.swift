import CourierHTTP
import Foundation
import NIOCore
import Testing

@testable import Courier

/// An upload's file, read in chunks off the event loops.
@Suite("File request bodies")
struct FileBodySourceTests {
    private func makeFile(_ bytes: [UInt8]) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("courier-body-\(UUID().uuidString)")
        try Data(bytes).write(to: url)
        return url
    }

    @Test func theFileComesInFullChunksThenTheEnd() async throws {
        let chunk = 64 * 1024
        let bytes = (0..<(3 * chunk + 5)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let url = try makeFile(bytes)
        defer { try? FileManager.default.removeItem(at: url) }
        let reader = try await FileBodySource(url: url).makeReader()
        defer { reader.close() }
        var sizes: [Int] = []
        var read: [UInt8] = []
        while let buffer = try await reader.read(maxLength: chunk) {
            sizes.append(buffer.readableBytes)
            read += buffer.readableBytesView
        }
        #expect(sizes == [chunk, chunk, chunk, 5])
        #expect(read == bytes)
        // Past the end it stays at the end.
        #expect(try await reader.read(maxLength: chunk) == nil)
    }

    @Test func eachPassStartsAtTheBeginning() async throws {
        let url = try makeFile(Array("first pass, second pass".utf8))
        defer { try? FileManager.default.removeItem(at: url) }
        let source = FileBodySource(url: url)
        for _ in 0..<2 {
            let reader = try await source.makeReader()
            let buffer = try #require(try await reader.read(maxLength: 1024))
            #expect(String(buffer: buffer) == "first pass, second pass")
            reader.close()
            // Closing twice (the writer's abandon and a late read's completion) is harmless.
            reader.close()
        }
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
