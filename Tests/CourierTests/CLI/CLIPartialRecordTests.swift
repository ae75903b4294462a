import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import courier

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// `FILE.courier-partial`, the record of `-C -`: read only when it is a regular file of the user, of bounded size.
@Suite("courier: the -C - record")
struct CLIPartialRecordTests {
    /// A FIFO at the record's name (planted beside an output in `/tmp`, say) is ignored at once: opening it does not
    /// wait for a writer, which would hold the tool forever. (Should the open block, the test opens the FIFO for
    /// writing after a while so that it ends, and fails.)
    @Test func aFIFOAtTheRecordsNameIsIgnoredWithoutWaiting() async throws {
        let folder = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = folder.appendingPathComponent("file.iso")
        let record = PartialRecord.location(for: destination)
        try #require(mkfifo(record.path, 0o600) == 0)
        // nil while the load has not returned; then whether it found a record.
        let found = NIOLockedValueBox<Bool?>(nil)
        let thread = Thread {
            let data = PartialRecord.load(for: destination)
            found.withLockedValue { $0 = data != nil }
        }
        thread.start()
        for _ in 0..<250 where found.withLockedValue({ $0 }) == nil {
            try await Task.sleep(for: .milliseconds(20))
        }
        let outcome = found.withLockedValue { $0 }
        if outcome == nil {
            let writer = open(record.path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
            for _ in 0..<250 where found.withLockedValue({ $0 }) == nil {
                try await Task.sleep(for: .milliseconds(20))
            }
            if writer >= 0 { close(writer) }
        }
        #expect(outcome == false)
    }

    /// A record of the largest accepted size is read whole; one byte more and it is ignored.
    @Test func aRecordIsReadUpToTheLimit() throws {
        let folder = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = folder.appendingPathComponent("file.iso")
        let largest = Data(repeating: 0x41, count: PartialRecord.maximumSize)
        try PartialRecord.save(largest, for: destination)
        #expect(PartialRecord.load(for: destination) == largest)
        try PartialRecord.save(largest + Data([0x41]), for: destination)
        #expect(PartialRecord.load(for: destination) == nil)
    }
}
