import Courier
import Foundation
import NIOConcurrencyHelpers
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `data:` and `file:` URLs, answered without the network by every task kind.
@Suite("data: and file: URLs")
struct LocalSchemeTests {
    @Test func aDataURLAnswersADataTaskWithAPlainResponse() async throws {
        let session = makeSession()
        defer { session.finishTasksAndInvalidate() }
        let url = try #require(URL(string: "data:text/html;charset=utf-8,%3Cp%3Ecaf%C3%A9%3C/p%3E"))
        let outcome = await session.runDataTask(url)
        #expect(outcome.error == nil)
        #expect(outcome.data == Data("<p>café</p>".utf8))
        let response = try #require(outcome.response)
        #expect(!(response is HTTPURLResponse))
        #expect(response.mimeType == "text/html")
        #expect(response.textEncodingName == "utf-8")
        #expect(response.expectedContentLength == Int64("<p>café</p>".utf8.count))
        #expect(response.url == url)
    }

    /// The fragment is the URL's, not the data's (as on Darwin); the response keeps the whole URL.
    @Test func aDataURLsFragmentIsNotInTheBody() async throws {
        let session = makeSession()
        defer { session.finishTasksAndInvalidate() }
        let url = try #require(URL(string: "data:text/plain,hello#frag"))
        let outcome = await session.runDataTask(url)
        #expect(outcome.error == nil)
        #expect(outcome.data == Data("hello".utf8))
        #expect(outcome.response?.expectedContentLength == 5)
        #expect(outcome.response?.url == url)
    }

    @Test func anInvalidDataURLIsBadURL() async throws {
        let session = makeSession()
        defer { session.finishTasksAndInvalidate() }
        let outcome = await session.runDataTask(try #require(URL(string: "data:;base64,%%%")))
        #expect(outcome.urlError?.code == .badURL)
        #expect(outcome.response == nil)
    }

    @Test func aDataURLDownloadsToAFile() async throws {
        let session = makeSession()
        defer { session.finishTasksAndInvalidate() }
        let bytes = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0) })
        let url = try #require(URL(string: "data:application/octet-stream;base64," + bytes.base64EncodedString()))
        let (file, response) = try await session.download(from: url)
        defer { try? FileManager.default.removeItem(at: file) }
        #expect(try Data(contentsOf: file) == bytes)
        #expect(response.mimeType == "application/octet-stream")
    }

    /// `resume()` returns at once, as on Darwin: a long `data:` URL is decoded on the stage executor, not on the
    /// thread that called it (megabytes of base64 decoded there blocked a main thread for up to seconds).
    /// A `data:` URL longer than ``LocalSchemeStage/immediateDataURLLength`` is decoded on the stage executor (see
    /// `StageChainTests.aLongDataURLWaitsForTheStageExecutor`); its body still arrives whole.
    @Test func aLongDataURLIsAnsweredInFull() async throws {
        let session = makeSession()
        defer { session.finishTasksAndInvalidate() }
        let payload = Data(repeating: 0x5A, count: 3_000_000)
        let url = try #require(URL(string: "data:application/octet-stream;base64," + payload.base64EncodedString()))
        let (data, response) = try await session.data(from: url)
        #expect(data.count == payload.count)
        #expect(data.allSatisfy { $0 == 0x5A })
        #expect(response.expectedContentLength == Int64(payload.count))
    }

    @Test func aSlowReaderHoldsADataURLsDeliveryBack() async throws {
        let session = makeSession()
        defer { session.finishTasksAndInvalidate() }
        let payload = Data(count: 6_000_000)
        let url = try #require(URL(string: "data:application/octet-stream;base64," + payload.base64EncodedString()))
        let (bytes, _) = try await session.bytes(from: url)
        var iterator = bytes.makeAsyncIterator()
        _ = try await iterator.next()
        // The body is in memory already, but it is handed over part by part: a reader that stops holds the
        // delivery back instead of having every part copied and queued at once.
        try await Task.sleep(for: .milliseconds(50))
        #expect(bytes.task.countOfBytesReceived < 2_000_000)
        bytes.task.cancel()
        // Not `#expect(throws:)`: it describes the error it caught, whose failing URL is the 8 MB `data:` URL (that
        // took twenty seconds of a debug build's CPU).
        var endedWithURLError = false
        do {
            while try await iterator.next() != nil {}
        } catch {
            endedWithURLError = error is URLError
        }
        #expect(endedWithURLError)
    }

    @Test func aFileIsStreamedByteExactToEveryTaskKind() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (file, sha) = try writePatternFile(length: 3_000_017, in: directory)
        let session = makeSession()
        defer { session.finishTasksAndInvalidate() }

        let (data, response) = try await session.data(from: file)
        #expect(sha256Hex(data) == sha)
        #expect(response.expectedContentLength == 3_000_017)
        #expect(response.mimeType == "application/octet-stream")

        let (downloaded, _) = try await session.download(from: file)
        defer { try? FileManager.default.removeItem(at: downloaded) }
        #expect(sha256Hex(try Data(contentsOf: downloaded)) == sha)

        // An upload to a file: URL reads the file; the body goes nowhere.
        let (uploaded, _) = try await session.upload(for: URLRequest(url: file), from: Data("ignored".utf8))
        #expect(sha256Hex(uploaded) == sha)

        // Read slowly through AsyncBytes: backpressure holds the reading back, the bytes stay exact.
        let (bytes, _) = try await session.bytes(from: file)
        var count = 0
        var mismatches = 0
        for try await byte in bytes {
            if byte != UInt8(count % 251) { mismatches += 1 }
            count += 1
            if count % 500_000 == 0 { try await Task.sleep(for: .milliseconds(20)) }
        }
        #expect(count == 3_000_017)
        #expect(mismatches == 0)
    }

    @Test func aFilesTypeComesFromItsExtension() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("page.HTML")
        try Data("<html></html>".utf8).write(to: file)
        let session = makeSession()
        defer { session.finishTasksAndInvalidate() }
        let outcome = await session.runDataTask(file)
        #expect(outcome.data == Data("<html></html>".utf8))
        #expect(outcome.response?.mimeType == "text/html")
    }

    @Test func fileErrorsHaveDarwinsCodes() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let session = makeSession()
        defer { session.finishTasksAndInvalidate() }

        let missing = await session.runDataTask(directory.appendingPathComponent("missing.txt"))
        #expect(missing.urlError?.code == .fileDoesNotExist)
        let folder = await session.runDataTask(directory)
        #expect(folder.urlError?.code == .fileIsDirectory)

        // A FIFO would block a reader forever: refused, without waiting for a writer.
        let fifo = directory.appendingPathComponent("fifo")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        let pipe = await session.runDataTask(fifo)
        #expect(pipe.urlError?.code == .cannotOpenFile)

        let remote = await session.runDataTask(try #require(URL(string: "file://example.invalid/etc/hostname")))
        #expect(remote.urlError?.code == .unsupportedURL)
    }

    /// A `file:` URL opens exactly the path it names. A trailing slash makes it a directory path: for a regular
    /// file that is `fileDoesNotExist` (the file system says ENOTDIR, as on Darwin), where `URL.path`, which drops
    /// the slash, read the file. A `%00` is refused: as a C string the path was cut short there and named another
    /// file, whose contents the task delivered.
    @Test func aFileURLOpensExactlyThePathItNames() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("plain.txt")
        try Data("plain".utf8).write(to: file)
        let session = makeSession()
        defer { session.finishTasksAndInvalidate() }

        let slashed = await session.runDataTask(try #require(URL(string: file.absoluteString + "/")))
        #expect(slashed.urlError?.code == .fileDoesNotExist)
        #expect(slashed.response == nil)

        let cut = await session.runDataTask(try #require(URL(string: file.absoluteString + "%00.secret")))
        #expect(cut.urlError?.code == .fileDoesNotExist)
        #expect(cut.response == nil)

        // Escaped bytes still name their file.
        let escaped = directory.appendingPathComponent("a b%.txt")
        try Data("escaped".utf8).write(to: escaped)
        let named = await session.runDataTask(escaped)
        #expect(named.error == nil)
        #expect(named.data == Data("escaped".utf8))
    }

    @Test(.enabled(if: getuid() != 0, "root reads every file"))
    func anUnreadableFileIsNoPermissionsToReadFile() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("secret.txt")
        try Data("secret".utf8).write(to: file)
        try FileManager.default.setAttributes([.posixPermissions: 0o000], ofItemAtPath: file.path)
        let session = makeSession()
        defer { session.finishTasksAndInvalidate() }
        let outcome = await session.runDataTask(file)
        #expect(outcome.urlError?.code == .noPermissionsToReadFile)
    }

    @Test func cancellingAFileTaskEndsItAsCancelled() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (file, _) = try writePatternFile(length: 8_000_000, in: directory)
        let session = makeSession()
        defer { session.finishTasksAndInvalidate() }
        let (bytes, _) = try await session.bytes(from: file)
        var iterator = bytes.makeAsyncIterator()
        _ = try await iterator.next()
        // A reader that stops holds the reading back: the file is not read ahead into memory.
        try await Task.sleep(for: .milliseconds(50))
        #expect(bytes.task.countOfBytesReceived < 2_000_000)
        bytes.task.cancel()
        // Not `#expect(throws:)`: it describes the error it caught, whose failing URL is the 8 MB `data:` URL (that
        // took twenty seconds of a debug build's CPU).
        var endedWithURLError = false
        do {
            while try await iterator.next() != nil {}
        } catch {
            endedWithURLError = error is URLError
        }
        #expect(endedWithURLError)
    }
}
