import CourierHTTP
import CourierTransport
import Foundation
import NIOCore
import Testing

@testable import Courier

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An upload's file, read in chunks off the event loops: each test runs through both ways the transport reads, a Swift
/// task (`read(maxLength:)`) and a future on an event loop (`read(maxLength:on:)`, what the HTTP/1 writer uses).
@Suite("File request bodies")
struct FileBodySourceTests {
    private func makeFile(_ bytes: [UInt8]) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("courier-body-\(UUID().uuidString)")
        try Data(bytes).write(to: url)
        return url
    }

    @Test(arguments: BodyReadPath.allCases)
    func theFileComesInFullChunksThenTheEnd(path: BodyReadPath) async throws {
        let chunk = 64 * 1024
        let bytes = (0..<(3 * chunk + 5)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let url = try makeFile(bytes)
        defer { try? FileManager.default.removeItem(at: url) }
        let reader = try await FileBodySource(url: url).makeReader()
        defer { reader.close() }
        let (sizes, capacities, read) = try await path.readAll(reader, chunk: chunk)
        #expect(sizes == [chunk, chunk, chunk, 5])
        // The short last chunk does not keep a whole chunk's storage alive while it waits to be written.
        #expect(capacities.last.map { $0 < chunk / 2 } == true)
        // Compared as one Boolean: a failure should not print two 192 KiB arrays.
        let sameBytes = read == bytes
        #expect(sameBytes)
        // Past the end it stays at the end.
        #expect(try await path.read(reader, maxLength: chunk) == nil)
    }

    @Test(arguments: BodyReadPath.allCases)
    func eachPassStartsAtTheBeginning(path: BodyReadPath) async throws {
        let url = try makeFile(Array("first pass, second pass".utf8))
        defer { try? FileManager.default.removeItem(at: url) }
        let source = FileBodySource(url: url)
        for _ in 0..<2 {
            let reader = try await source.makeReader()
            let buffer = try #require(try await path.read(reader, maxLength: 1024))
            #expect(String(buffer: buffer) == "first pass, second pass")
            reader.close()
            // Closing twice is harmless.
            reader.close()
        }
    }

    @Test(arguments: BodyReadPath.allCases)
    func aReadAfterCloseFailsInsteadOfReadingAReusedDescriptor(path: BodyReadPath) async throws {
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
            _ = try await path.read(reader, maxLength: 1024)
        } throws: { error in
            (error as? TransferError)?.urlErrorCode == .cannotOpenFile
        }
    }

    @Test(arguments: BodyReadPath.allCases)
    func aCloseDuringAReadWaitsForTheRead(path: BodyReadPath) async throws {
        let bytes = [UInt8](repeating: 7, count: 256 * 1024)
        let url = try makeFile(bytes)
        defer { try? FileManager.default.removeItem(at: url) }
        let reader = try await FileBodySource(url: url).makeReader()
        async let chunk = path.read(reader, maxLength: bytes.count)
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
        await #expect(throws: TransferError.self) { _ = try await path.read(reader, maxLength: 16) }
    }

    /// A file that went away between the length check and the read is `fileDoesNotExist`, as a missing file is
    /// at the start (it was `cannotOpenFile`).
    @Test func aFileThatWentAwayIsFileDoesNotExist() async throws {
        let url = try makeFile([1, 2, 3])
        let source = FileBodySource(url: url)
        try FileManager.default.removeItem(at: url)
        await #expect {
            _ = try await source.makeReader()
        } throws: { error in
            (error as? TransferError)?.urlErrorCode == .fileDoesNotExist
        }
    }

    /// `stat(2)` and `open(2)` failures map by `errno`, as `file:` URLs do: a refusal (also by a folder above the
    /// file, which made every stat failure `fileDoesNotExist` before) is `noPermissionsToReadFile`. (The tests run as
    /// root, which no permission stops, so the refusals are checked on the mapping itself.)
    @Test(arguments: [
        (ENOENT, URLError.Code.fileDoesNotExist), (ENOTDIR, .fileDoesNotExist), (EACCES, .noPermissionsToReadFile),
        (EPERM, .noPermissionsToReadFile), (EIO, .cannotOpenFile), (ELOOP, .cannotOpenFile),
    ])
    func statAndOpenFailuresMapByErrno(code: Int32, expected: URLError.Code) {
        #expect(FileAccessFailure.error(errno: code, file: "the file /x").urlErrorCode == expected)
    }

    @Test func aPathThroughAFileIsFileDoesNotExist() throws {
        let file = try makeFile([1])
        defer { try? FileManager.default.removeItem(at: file) }
        do {
            _ = try FileBodySource.length(of: file.appendingPathComponent("below"))
            Issue.record("a path through a file was taken as a file to upload")
        } catch {
            #expect(error.urlErrorCode == .fileDoesNotExist)
        }
    }

    /// `attributesOfItem` describes a link itself: the length was the link's (the length of the path it holds), while
    /// the upload read the file it names, and failed on the difference.
    @Test func aSymbolicLinkHasTheLengthOfTheFileItNames() throws {
        let target = try makeFile([UInt8](repeating: 7, count: 1000))
        defer { try? FileManager.default.removeItem(at: target) }
        let link = target.appendingPathExtension("link")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: target)
        defer { try? FileManager.default.removeItem(at: link) }
        #expect(try FileBodySource.length(of: link) == 1000)
    }

    /// A FIFO (whose open waits for a writer) and a device (which never ends) have no length: they used to be
    /// announced as `Content-Length: 0`, a complete empty request, before the read failed or hung.
    @Test func aFIFOOrADeviceIsCannotOpenFile() throws {
        let fifo = FileManager.default.temporaryDirectory.appendingPathComponent("courier-fifo-\(UUID().uuidString)")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        defer { try? FileManager.default.removeItem(at: fifo) }
        for url in [fifo, URL(fileURLWithPath: "/dev/zero")] {
            do {
                _ = try FileBodySource.length(of: url)
                Issue.record("\(url.path) was taken as a file to upload")
            } catch {
                #expect(error.urlErrorCode == .cannotOpenFile)
            }
        }
    }

    /// The path is opened again for each pass of the body (a retry, a 307), after `length(of:)` checked it: a FIFO
    /// put in the file's place meanwhile made the blocking open wait for a writer on a thread-pool thread that
    /// cancelling cannot free. It is refused at once now.
    @Test func aFIFOInTheFilesPlaceWhenItIsOpenedIsRefusedWithoutWaiting() async throws {
        let fifo = FileManager.default.temporaryDirectory.appendingPathComponent("courier-fifo-\(UUID().uuidString)")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        defer { try? FileManager.default.removeItem(at: fifo) }
        let opened = Task { () -> URLError.Code? in
            do {
                _ = try await FileBodySource(url: fifo).makeReader()
                return nil
            } catch {
                return (error as? TransferError)?.urlErrorCode
            }
        }
        let waited = Task {
            try await Task.sleep(for: .seconds(20))
            // Still waiting for a writer: be one, so that the open returns and the test ends.
            let writer = open(fifo.path, O_WRONLY | O_NONBLOCK)
            if writer >= 0 { close(writer) }
            return true
        }
        let code = await opened.value
        waited.cancel()
        let wrote = try? await waited.value
        #expect(wrote == nil, "the open waited for a writer")
        #expect(code == .cannotOpenFile)
    }
}
