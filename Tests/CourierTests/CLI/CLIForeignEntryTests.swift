import Foundation
import Testing

@testable import courier

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// An output path another local user prepared in a shared folder (`/tmp`): their FIFO, or their link, must not
/// receive the body. Changing an entry's owner needs root, as the suite runs in CI.
@Suite("courier: outputs another user planted", .enabled(if: geteuid() == 0))
struct CLIForeignEntryTests {
    private let stranger: uid_t = 65_534

    /// A folder like `/tmp`: sticky and writable by everyone.
    private func sharedFolder() throws -> URL {
        let folder = try makeTemporaryDirectory()
        chmod(folder.path, 0o1777)
        return folder
    }

    private func expectRefused(_ path: String) {
        do {
            _ = try OutputSink(path: path)
            Issue.record("\(path) was opened")
        } catch {
            #expect((error as NSError).code == Int(EPERM), "\(error)")
        }
    }

    @Test func anotherUsersFIFOIsRefusedAndOursIsWritten() throws {
        let folder = try sharedFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        for owner in [stranger, geteuid()] {
            let fifo = folder.appendingPathComponent("report-\(owner).pdf")
            #expect(mkfifo(fifo.path, 0o666) == 0)
            #expect(chown(fifo.path, owner, owner) == 0)
            // The reader is there already, so an open for writing does not wait for one.
            let reader = open(fifo.path, O_RDONLY | O_NONBLOCK)
            try #require(reader >= 0)
            defer { close(reader) }
            if owner == stranger {
                expectRefused(fifo.path)
            } else {
                let sink = try OutputSink(path: fifo.path)
                try sink.write(Data("ours".utf8))
                var bytes = [UInt8](repeating: 0, count: 8)
                #expect(read(reader, &bytes, 8) == 4)
            }
        }
    }

    @Test func anotherUsersLinkToOneOfOurDescriptorsIsRefused() throws {
        let folder = try sharedFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let link = folder.appendingPathComponent("out")
        #expect(symlink("/proc/self/fd/1", link.path) == 0)
        #expect(lchown(link.path, stranger, stranger) == 0)
        expectRefused(link.path)
    }

    @Test func anotherUsersLinkFurtherAlongTheChainIsRefused() throws {
        let folder = try sharedFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let target = folder.appendingPathComponent("theirs")
        try Data("theirs".utf8).write(to: target)
        let second = folder.appendingPathComponent("second")
        #expect(symlink(target.path, second.path) == 0)
        #expect(lchown(second.path, stranger, stranger) == 0)
        let first = folder.appendingPathComponent("first")
        #expect(symlink(second.path, first.path) == 0)
        expectRefused(first.path)
        #expect(try String(contentsOf: target, encoding: .utf8) == "theirs")
    }
}
