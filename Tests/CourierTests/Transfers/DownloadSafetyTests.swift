import CourierHTTP
import CourierMockServer
import CourierTestSupport
import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import Courier

#if canImport(Glibc)
    import Glibc
#endif

/// Where downloads live and who can touch them: private folders, private files, no planted links followed, no
/// file left behind by a cancel, and partial files that do not stay forever.
@Suite("Download safety")
struct DownloadSafetyTests {
    private static func mode(_ url: URL) throws -> mode_t {
        var info = stat()
        guard lstat(url.path, &info) == 0 else { throw CocoaError(.fileNoSuchFile) }
        return info.st_mode & 0o7777
    }

    @Test func theFolderIsCreated0700AndTheFile0600() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // Two missing levels: both are created private.
        let downloads = directory.appendingPathComponent("cache/downloads")
        try await withServer { server in
            server.route("/f", response: MockResponse(body: .pattern(length: 10_000)))
            let session = makeSession { $0.courierDownloadDirectory = downloads }
            let (url, _) = try await session.download(from: server.url("/f"))
            #expect(try Self.mode(url) == 0o600)
            #expect(try Self.mode(downloads) == 0o700)
            #expect(try Self.mode(downloads.deletingLastPathComponent()) == 0o700)
            #expect(try fileHoldsPattern(url, length: 10_000))
            try FileManager.default.removeItem(at: url)
        }
    }

    @Test(arguments: ["group-writable", "world-writable", "symlink", "a-file"])
    func aFolderOthersCanTouchIsRefused(kind: String) async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let downloads = directory.appendingPathComponent("downloads")
        let elsewhere = directory.appendingPathComponent("elsewhere")
        switch kind {
        case "group-writable":
            try FileManager.default.createDirectory(at: downloads, withIntermediateDirectories: false)
            chmod(downloads.path, 0o770)
        case "world-writable":
            try FileManager.default.createDirectory(at: downloads, withIntermediateDirectories: false)
            chmod(downloads.path, 0o1777)
        case "symlink":
            try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: false)
            chmod(elsewhere.path, 0o700)
            try FileManager.default.createSymbolicLink(at: downloads, withDestinationURL: elsewhere)
        default:
            try Data("x".utf8).write(to: downloads)
        }
        try await withServer { server in
            server.route("/f", response: MockResponse(body: .pattern(length: 1000)))
            let session = makeSession { $0.courierDownloadDirectory = downloads }
            do {
                _ = try await session.download(from: server.url("/f"))
                Issue.record("expected the download to refuse \(kind)")
            } catch let error as URLError {
                #expect(error.code == .cannotCreateFile)
                #expect(error.localizedDescription.contains(downloads.path))
            }
            if kind == "symlink" { #expect(filesIn(elsewhere).isEmpty) }
            if kind.hasSuffix("writable") { #expect(filesIn(downloads).isEmpty) }
        }
    }

    /// Another user created the folder first (the old shared `/tmp/Courier` attack). Needs root to make a folder
    /// of another uid; skipped otherwise.
    @Test(.enabled(if: geteuid() == 0, "needs root to create a folder of another user"))
    func aFolderOfAnotherUserIsRefused() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let downloads = directory.appendingPathComponent("downloads")
        try FileManager.default.createDirectory(at: downloads, withIntermediateDirectories: false)
        chmod(downloads.path, 0o700)
        #expect(chown(downloads.path, 65534, 65534) == 0)
        try await withServer { server in
            server.route("/f", response: MockResponse(body: .pattern(length: 1000)))
            let session = makeSession { $0.courierDownloadDirectory = downloads }
            do {
                _ = try await session.download(from: server.url("/f"))
                Issue.record("expected the download to refuse a folder of uid 65534")
            } catch let error as URLError {
                #expect(error.code == .cannotCreateFile)
                #expect(error.localizedDescription.contains("another user"))
            }
            #expect(filesIn(downloads).isEmpty)
        }
    }

    @Test func aSymlinkPlantedAsThePartialFileIsNotFollowed() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let length: Int64 = 300_000
        try await withServer { server in
            serveRanges(on: server, path: "/r", body: .pattern(length: length)) { $0.closeAfterBodyBytes = 100_000 }
            let downloads = directory.appendingPathComponent("downloads")
            let session = makeSession { $0.courierDownloadDirectory = downloads }
            let resumeData = await session.resumeDataOfFailedDownload(from: server.url("/r"))
            let data = try #require(resumeData)
            let partial = try #require(filesIn(downloads).first)
            let partialURL = downloads.appendingPathComponent(partial)
            // The victim: a file the attacker wants bytes written into.
            let victim = directory.appendingPathComponent("victim")
            let original = Data(repeating: 0x41, count: 200_000)
            try original.write(to: victim)
            try FileManager.default.removeItem(at: partialURL)
            try FileManager.default.createSymbolicLink(at: partialURL, withDestinationURL: victim)
            do {
                _ = try await session.download(resumeFrom: data)
                Issue.record("expected the resume to refuse a symbolic link")
            } catch let error as URLError {
                #expect(error.code == .cannotOpenFile)
            }
            #expect(try Data(contentsOf: victim) == original)
            #expect(server.requests.count == 1)
        }
    }

    /// Retry code that resumes the same resume data twice: the two tasks used to cut and write one file at once,
    /// and the first to finish delivered a "complete" file with a hole of zeros.
    @Test func oneResumeDataIsResumedByOneTaskAtATime() async throws {
        try await withResumeData { session, data, length in
            @Sendable func resume() async -> Result<(URL, URLResponse), any Error> {
                do { return .success(try await session.download(resumeFrom: data)) } catch { return .failure(error) }
            }
            async let first = resume()
            async let second = resume()
            let results = await [first, second]
            let successes = results.compactMap { try? $0.get().0 }
            let failures = results.compactMap { result -> URLError? in
                if case .failure(let error) = result { return error as? URLError }
                return nil
            }
            #expect(successes.count == 1)
            #expect(failures.map(\.code) == [.cannotOpenFile])
            for file in successes {
                #expect(try fileHoldsPattern(file, length: length))
                try FileManager.default.removeItem(at: file)
            }
        }
    }

    /// Another process resuming the same resume data (two runs of `courier get -C -`): what it holds is an
    /// exclusive lock on its open partial file. This resume fails and leaves the file alone; the two cut and wrote
    /// one file at once, and the first to finish delivered it with a hole. Once the lock is gone it resumes.
    @Test func aPartialFileAnotherProcessIsResumingIsLeftAlone() async throws {
        try await withResumeData { session, data, length in
            let folder = session.configuration.courierDownloadDirectory
            let name = try #require(filesIn(folder).first { $0.hasPrefix(DownloadDirectory.fileNamePrefix) })
            let path = folder.appendingPathComponent(name).path
            let other = open(path, O_RDONLY | O_CLOEXEC)
            #expect(other >= 0)
            #expect(flock(other, LOCK_EX | LOCK_NB) == 0)
            do {
                _ = try await session.download(resumeFrom: data)
                Issue.record("a partial file another process holds was resumed")
            } catch {
                #expect((error as? URLError)?.code == .cannotOpenFile)
            }
            #expect(DownloadDirectory.partialFileSize(at: URL(fileURLWithPath: path)) == 100_000)
            close(other)
            let (file, _) = try await session.download(resumeFrom: data)
            #expect(try fileHoldsPattern(file, length: length))
            try FileManager.default.removeItem(at: file)
        }
    }

    /// The same resume data resumed again after a first resume completed: the delivered file has a new name, so
    /// the second resume finds no partial file instead of claiming (and appending to) the file the app now owns.
    @Test func aSecondResumeAfterTheFirstCompletedCannotReachTheDeliveredFile() async throws {
        try await withResumeData { session, data, length in
            let (delivered, _) = try await session.download(resumeFrom: data)
            #expect(try fileHoldsPattern(delivered, length: length))
            do {
                _ = try await session.download(resumeFrom: data)
                Issue.record("the second resume of the same resume data succeeded")
            } catch {
                #expect((error as? URLError)?.code == .cannotOpenFile)
            }
            #expect(try fileHoldsPattern(delivered, length: length))
            try FileManager.default.removeItem(at: delivered)
        }
    }

    /// Runs `body` with a session on a private download folder and the resume data of a download of `length`
    /// pattern bytes that broke off after 100,000.
    private func withResumeData(
        _ body: @Sendable (_ session: URLSession, _ data: Data, _ length: Int64) async throws -> Void
    ) async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let length: Int64 = 600_000
        try await withServer { server in
            serveRanges(on: server, path: "/r", body: .pattern(length: length)) { $0.closeAfterBodyBytes = 100_000 }
            let downloads = directory.appendingPathComponent("downloads")
            let session = makeSession { $0.courierDownloadDirectory = downloads }
            let data = try #require(await session.resumeDataOfFailedDownload(from: server.url("/r")))
            try await body(session, data, length)
        }
    }

    /// A resume that fails before any response gives its claim on the partial file back: the same resume data
    /// works afterwards.
    @Test func aResumeThatFailsEarlyLeavesThePartialFileResumable() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let length: Int64 = 300_000
        try await withServer { server in
            var first = MockResponse(
                headers: [("ETag", "\"v1\""), ("Accept-Ranges", "bytes")], body: .pattern(length: length))
            first.closeAfterBodyBytes = 100_000
            var dropped = MockResponse()
            dropped.closeWithoutResponse = true
            server.enqueue(first, dropped)
            let downloads = directory.appendingPathComponent("downloads")
            let session = makeSession { $0.courierDownloadDirectory = downloads }
            let data = try #require(await session.resumeDataOfFailedDownload(from: server.url("/e")))
            do {
                _ = try await session.download(resumeFrom: data)
                Issue.record("expected the dropped connection to fail the resume")
            } catch {}
            serveRanges(on: server, path: "/e", body: .pattern(length: length))
            let (file, _) = try await session.download(resumeFrom: data)
            #expect(try fileHoldsPattern(file, length: length))
            try FileManager.default.removeItem(at: file)
        }
    }

    @Test func theDefaultFolderIsAPerUserCacheFolder() {
        let uid = geteuid()
        #expect(
            DownloadDirectory.defaultLocation(environment: ["XDG_CACHE_HOME": "/c", "HOME": "/h"]).path
                == "/c/courier/downloads")
        #expect(DownloadDirectory.defaultLocation(environment: ["HOME": "/h"]).path == "/h/.cache/courier/downloads")
        // Relative XDG values are ignored, as the XDG specification says.
        #expect(
            DownloadDirectory.defaultLocation(environment: ["XDG_CACHE_HOME": "c", "HOME": "/h"]).path
                == "/h/.cache/courier/downloads")
        #expect(DownloadDirectory.defaultLocation(environment: ["TMPDIR": "/t"]).path == "/t/courier-\(uid)")
        #expect(DownloadDirectory.defaultLocation(environment: ["HOME": "/"]).path == "/tmp/courier-\(uid)")
        #expect(URLSessionConfiguration.default.courierDownloadDirectory == DownloadDirectory.defaultFolder)
    }

    // MARK: - Cancels leave nothing behind

    /// A cancel that lands while the head is being delivered used to let the head open a file after the cancel
    /// had discarded the (not yet opened) download.
    @Test func aHeadArrivingAfterTheCancelOpensNoFile() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let sink = DownloadSink(
            directory: directory, onBackpressure: {}, onWrite: { _, _ in }, onFailure: { _ in })
        sink.discard()
        sink.open()
        sink.append(Data("late".utf8))
        let result = await withCheckedContinuation { continuation in
            sink.finish { continuation.resume(returning: $0) }
        }
        #expect((try? result.get()) == nil)
        // The file queue runs asynchronously; give it time to (wrongly) create a file.
        try await Task.sleep(for: .milliseconds(200))
        #expect(filesIn(directory).isEmpty)
    }

    @Test func aStormOfCancelsLeavesNoFileBehind() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await withServer { server in
            var slow = MockResponse(body: .pattern(length: 400_000))
            slow.chunkDelay = .milliseconds(2)
            server.route("/s", response: slow)
            let session = makeSession {
                $0.courierDownloadDirectory = directory
                $0.httpMaximumConnectionsPerHost = 16
            }
            let received = await withTaskGroup(of: Int64.self) { group in
                for index in 0..<120 {
                    group.addTask {
                        let task = session.downloadTask(with: server.url("/s"))
                        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                            let done = CompletionFlag(continuation)
                            if index.isMultiple(of: 2) {
                                // Spread over the first 30 ms: before the request leaves, while it waits for a
                                // connection, as the head arrives.
                                task.delegate = CompletionDelegate { done.fire() }
                                task.resume()
                                DispatchQueue.global().asyncAfter(deadline: .now() + .microseconds(index * 250)) {
                                    task.cancel()
                                }
                            } else {
                                // Mid-body, at a point of its own: a partial file exists when the cancel comes.
                                task.delegate = CancelAfterBytesDelegate(after: Int64(index) * 3_000) { done.fire() }
                                task.resume()
                            }
                        }
                        return task.countOfBytesReceived
                    }
                }
                return await group.reduce(into: [Int64]()) { $0.append($1) }
            }
            // Half the storm was cancelled with part of the body written, or it would prove nothing about the files.
            #expect(received.filter { $0 > 0 }.count >= 60)
            // Files are removed on their own queues after the completion; allow them to settle.
            var remaining = filesIn(directory)
            for _ in 0..<100 where !remaining.isEmpty {
                try await Task.sleep(for: .milliseconds(50))
                remaining = filesIn(directory)
            }
            #expect(remaining.isEmpty)
        }
    }

    // MARK: - Sweeping old partial files

    @Test func partialFilesOlderThanTheLifetimeAreSwept() throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let now = Date(timeIntervalSince1970: 2_000_000_000)
        func make(_ name: String, age: TimeInterval) throws -> URL {
            let url = directory.appendingPathComponent(name)
            try Data("x".utf8).write(to: url)
            try FileManager.default.setAttributes(
                [.modificationDate: now.addingTimeInterval(-age)], ofItemAtPath: url.path)
            return url
        }
        let lifetime = DownloadDirectory.partialFileLifetime
        _ = try make("CFNetworkDownload_old.tmp", age: lifetime + 60)
        _ = try make("CFNetworkDownload_new.tmp", age: lifetime - 60)
        _ = try make("someone-elses-file.tmp", age: lifetime * 4)
        // A link with our name to an old file elsewhere: neither the link's target nor the link is touched.
        let outside = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: outside) }
        let target = outside.appendingPathComponent("target")
        try Data("keep".utf8).write(to: target)
        try FileManager.default.setAttributes(
            [.modificationDate: now.addingTimeInterval(-lifetime * 4)], ofItemAtPath: target.path)
        try FileManager.default.createSymbolicLink(
            at: directory.appendingPathComponent("CFNetworkDownload_link.tmp"), withDestinationURL: target)

        let deleted = DownloadDirectory.sweep(directory, now: now)
        #expect(deleted == ["CFNetworkDownload_old.tmp"])
        #expect(
            Set(filesIn(directory))
                == ["CFNetworkDownload_new.tmp", "someone-elses-file.tmp", "CFNetworkDownload_link.tmp"])
        #expect(try Data(contentsOf: target) == Data("keep".utf8))
    }

    @Test func aFileBeingWrittenIsNeverSweptHoweverOld() throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent(DownloadFile.makeName())
        let handle = try DownloadDirectory.createFile(at: url)
        defer { DownloadDirectory.release(url) }
        try handle.close()
        let later = Date().addingTimeInterval(DownloadDirectory.partialFileLifetime * 2)
        #expect(DownloadDirectory.sweep(directory, now: later).isEmpty)
        DownloadDirectory.release(url)
        #expect(DownloadDirectory.sweep(directory, now: later) == [url.lastPathComponent])
    }

    @Test func creatingASessionSweepsItsFolder() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let old = directory.appendingPathComponent("CFNetworkDownload_stale.tmp")
        try Data("stale".utf8).write(to: old)
        try FileManager.default.setAttributes(
            [.modificationDate: Date().addingTimeInterval(-DownloadDirectory.partialFileLifetime - 3600)],
            ofItemAtPath: old.path)
        // A recent partial file (another session's download under way) is left alone.
        let recent = directory.appendingPathComponent("CFNetworkDownload_recent.tmp")
        try Data("recent".utf8).write(to: recent)
        _ = makeSession { $0.courierDownloadDirectory = directory }
        for _ in 0..<100 where FileManager.default.fileExists(atPath: old.path) {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(!FileManager.default.fileExists(atPath: old.path))
        #expect(FileManager.default.fileExists(atPath: recent.path))
    }

    /// A FIFO found where a partial file was checked (swapped in meanwhile) is refused at once: the open does not
    /// wait for a reader, which would hold the download file's queue forever. (Should the open block, the test opens
    /// the FIFO for reading after a while so that it ends, and fails.)
    @Test func aFIFOInPlaceOfThePartialFileIsRefusedWithoutWaiting() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let fifo = directory.appendingPathComponent(DownloadFile.makeName())
        try #require(mkfifo(fifo.path, 0o600) == 0)
        // nil while the open has not returned; then whether it was refused.
        let refused = NIOLockedValueBox<Bool?>(nil)
        let thread = Thread {
            do {
                let handle = try DownloadDirectory.openPartialFile(at: fifo)
                try? handle.close()
                DownloadDirectory.release(fifo)
                refused.withLockedValue { $0 = false }
            } catch {
                refused.withLockedValue { $0 = true }
            }
        }
        thread.start()
        for _ in 0..<250 where refused.withLockedValue({ $0 }) == nil {
            try await Task.sleep(for: .milliseconds(20))
        }
        let outcome = refused.withLockedValue { $0 }
        if outcome == nil {
            let reader = open(fifo.path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
            for _ in 0..<250 where refused.withLockedValue({ $0 }) == nil {
                try await Task.sleep(for: .milliseconds(20))
            }
            if reader >= 0 { close(reader) }
        }
        #expect(outcome == true)
    }

    /// A partial file's name is unlinked when the file is dropped, never removed recursively: a folder put in the
    /// file's place meanwhile (the download folder is the user's) keeps what it holds. Both ways a partial file is
    /// dropped: a resume the server's answer made useless, and a download file removed by its task.
    @Test func aFolderInPlaceOfADroppedFileIsNotEmptied() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        func folderWithAFile(at url: URL) throws -> URL {
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
            let inside = url.appendingPathComponent("kept")
            try Data("keep".utf8).write(to: inside)
            return inside
        }

        // The resumed task's claim on the name is given up once the deletion is done.
        let discarded = directory.appendingPathComponent(DownloadFile.makeName())
        let keptByDiscard = try folderWithAFile(at: discarded)
        try #require(DownloadDirectory.claim(discarded))
        TaskEngine.discardPartialFile(discarded)
        var deletionDone = false
        for _ in 0..<250 {
            if DownloadDirectory.claim(discarded) {
                deletionDone = true
                break
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        DownloadDirectory.release(discarded)
        #expect(deletionDone)
        #expect(FileManager.default.fileExists(atPath: keptByDiscard.path))

        // A download file the task created, replaced by a folder before the task removes it.
        let name = DownloadFile.makeName()
        let file = DownloadFile(directory: directory, name: name)
        let created: Result<Void, TransferError> = await withCheckedContinuation { continuation in
            file.ready { continuation.resume(returning: $0) }
        }
        try created.get()
        let removed = directory.appendingPathComponent(name)
        #expect(unlink(removed.path) == 0)
        let keptByRemove = try folderWithAFile(at: removed)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            file.remove { continuation.resume() }
        }
        #expect(FileManager.default.fileExists(atPath: keptByRemove.path))
    }
}

/// Resumes a continuation once.
private final class CompletionFlag: @unchecked Sendable {
    private var continuation: CheckedContinuation<Void, Never>?
    private let lock = NSLock()

    init(_ continuation: CheckedContinuation<Void, Never>) { self.continuation = continuation }

    func fire() {
        lock.lock()
        let pending = continuation
        continuation = nil
        lock.unlock()
        pending?.resume()
    }
}

/// A download task's delegate that cancels its task once `after` bytes (at least one) were written, and reports the
/// completion.
private final class CancelAfterBytesDelegate: NSObject, URLSessionDownloadDelegate, @unchecked Sendable {
    private let after: Int64
    private let onComplete: @Sendable () -> Void

    init(after: Int64, _ onComplete: @escaping @Sendable () -> Void) {
        self.after = max(1, after)
        self.onComplete = onComplete
    }

    func urlSession(
        _ session: URLSession, downloadTask: URLSessionDownloadTask, didWriteData bytesWritten: Int64,
        totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64
    ) {
        if totalBytesWritten >= after { downloadTask.cancel() }
    }

    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL) {
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        onComplete()
    }
}

/// A download delegate that moves the delivered file away and puts a folder of its own, holding a file, in its
/// place; at completion it reports whether that folder is still whole.
private final class ReplacingFolderDelegate: NSObject, URLSessionDownloadDelegate, @unchecked Sendable {
    let moved: URL
    let folderWhole = NIOLockedValueBox<Bool?>(nil)
    private let placed = NIOLockedValueBox<URL?>(nil)
    private let onComplete: @Sendable () -> Void

    init(movingTo moved: URL, _ onComplete: @escaping @Sendable () -> Void) {
        self.moved = moved
        self.onComplete = onComplete
    }

    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL) {
        try? FileManager.default.moveItem(at: location, to: moved)
        try? FileManager.default.createDirectory(at: location, withIntermediateDirectories: false)
        try? Data("the app's".utf8).write(to: location.appendingPathComponent("kept"))
        placed.withLockedValue { $0 = location }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let folder = placed.withLockedValue { $0 }
        folderWhole.withLockedValue {
            $0 = folder.map { FileManager.default.fileExists(atPath: $0.appendingPathComponent("kept").path) }
        }
        onComplete()
    }
}

extension DownloadSafetyTests {
    /// After `didFinishDownloadingTo` returns, the delivered file's name is unlinked, not removed recursively: a
    /// folder the delegate put in its place (after moving the file) was deleted with everything in it.
    @Test func whatTheDelegatePutInTheFilesPlaceIsNotDeleted() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await withServer { server in
            server.route("/f", response: MockResponse(body: .pattern(length: 10_000)))
            let downloads = directory.appendingPathComponent("downloads")
            let moved = directory.appendingPathComponent("moved")
            let session = makeSession { $0.courierDownloadDirectory = downloads }
            var delegate: ReplacingFolderDelegate?
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let done = CompletionFlag(continuation)
                let task = session.downloadTask(with: server.url("/f"))
                let replacing = ReplacingFolderDelegate(movingTo: moved) { done.fire() }
                delegate = replacing
                task.delegate = replacing
                task.resume()
            }
            let replacing = try #require(delegate)
            #expect(replacing.folderWhole.withLockedValue { $0 } == true)
            #expect(try fileHoldsPattern(moved, length: 10_000))
            session.invalidateAndCancel()
        }
    }
}

/// Cancels its download at the last write, and writes down what `cancel()` left the task in and how it ended.
private final class CancelAtTheEndDelegate: NSObject, URLSessionDownloadDelegate, @unchecked Sendable {
    struct Outcome: Sendable {
        var stateAfterCancel: URLSessionTask.State?
        var finishedDownload = false
        var error: URLError.Code?
    }

    let outcome = NIOLockedValueBox(Outcome())
    private let onComplete: @Sendable () -> Void

    init(_ onComplete: @escaping @Sendable () -> Void) { self.onComplete = onComplete }

    func urlSession(
        _ session: URLSession, downloadTask: URLSessionDownloadTask, didWriteData bytesWritten: Int64,
        totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64
    ) {
        guard totalBytesWritten == totalBytesExpectedToWrite else { return }
        downloadTask.cancel()
        let state = downloadTask.state
        outcome.withLockedValue { $0.stateAfterCancel = state }
    }

    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL) {
        outcome.withLockedValue { $0.finishedDownload = true }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        outcome.withLockedValue { $0.error = (error as? URLError)?.code }
        onComplete()
    }
}

extension DownloadSafetyTests {
    /// `cancel()` at the last write, while the download's file is closed and renamed: once `cancel()` left the task
    /// `.canceling`, it ends cancelled without handing the file over (Apple: a task marked cancelled completes with
    /// `NSURLErrorCancelled`). It delivered the file and completed without an error. The race is run many times:
    /// each run that hits the window must end cancelled.
    @Test func aDownloadCancelledWhileItsFileIsPutAwayEndsCancelled() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await withServer { server in
            server.route("/f", response: MockResponse(body: .pattern(length: 300_000)))
            let session = makeSession { $0.courierDownloadDirectory = directory.appendingPathComponent("downloads") }
            defer { session.invalidateAndCancel() }
            var late = 0
            for _ in 0..<40 {
                let delegate: CancelAtTheEndDelegate = await withCheckedContinuation { continuation in
                    let holder = NIOLockedValueBox<CancelAtTheEndDelegate?>(nil)
                    let delegate = CancelAtTheEndDelegate {
                        continuation.resume(returning: holder.withLockedValue { $0! })
                    }
                    holder.withLockedValue { $0 = delegate }
                    let task = session.downloadTask(with: server.url("/f"))
                    task.delegate = delegate
                    task.resume()
                }
                let outcome = delegate.outcome.withLockedValue { $0 }
                guard outcome.stateAfterCancel == .canceling else { continue }
                late += 1
                #expect(outcome.error == .cancelled)
                #expect(!outcome.finishedDownload)
            }
            #expect(late > 0, "no run cancelled before the completion")
        }
    }
}

/// A task delegate that only reports completion.
private final class CompletionDelegate: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    private let onComplete: @Sendable () -> Void

    init(_ onComplete: @escaping @Sendable () -> Void) { self.onComplete = onComplete }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        onComplete()
    }
}

/// A discarded download's file is gone before the task is told it may complete: an app or a command that exits
/// on the completion leaves no file behind. (The engine completed a failed download without waiting for the
/// removal, and `courier get -C -` once left a `CFNetworkDownload_*.tmp` in its folder that way.)
@Suite("Download discard completes after the file is gone")
struct DownloadDiscardOrderTests {
    @Test func theCompletionWaitsForTheRemoval() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let fileQueue = DispatchQueue(label: "test.download.files")
        let sink = DownloadSink(
            directory: directory, fileQueueTarget: fileQueue, onBackpressure: {}, onWrite: { _, _ in },
            onFailure: { _ in })
        sink.open()
        sink.append(Data("partial body".utf8))
        let written = await withCheckedContinuation { continuation in
            fileQueue.async { continuation.resume(returning: filesIn(directory).count) }
        }
        #expect(written == 1)
        // The file's queue is held: the removal cannot run, so neither may the completion.
        fileQueue.suspend()
        let completed = NIOLockedValueBox(false)
        let leftAtCompletion = NIOLockedValueBox<[String]?>(nil)
        sink.discard {
            leftAtCompletion.withLockedValue { $0 = filesIn(directory) }
            completed.withLockedValue { $0 = true }
        }
        try await Task.sleep(for: .milliseconds(100))
        #expect(!completed.withLockedValue { $0 })
        #expect(filesIn(directory).count == 1)
        fileQueue.resume()
        // Polled, not a blocking wait: a test must not hold one of the few threads every async test shares.
        try await waitUntil { completed.withLockedValue { $0 } }
        #expect(leftAtCompletion.withLockedValue { $0 } == [])
    }
}

extension DownloadDiscardOrderTests {
    /// End to end: a download that breaks off with no way to resume (no validator) has no file left in the folder
    /// when its failure is delivered.
    @Test func aFailedDownloadHasNoFileLeftAtItsCompletion() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await withServer { server in
            var broken = MockResponse(body: .pattern(length: 300_000))
            broken.closeAfterBodyBytes = 100_000
            server.route("/b", response: broken)
            let session = makeSession { $0.courierDownloadDirectory = directory }
            for _ in 0..<5 {
                let (leftAtCompletion, error): ([String], URLError?) = await withCheckedContinuation { continuation in
                    session.downloadTask(with: server.url("/b")) { _, _, error in
                        continuation.resume(returning: (filesIn(directory), error as? URLError))
                    }.resume()
                }
                // Broken off mid-body, so a partial file existed before the failure.
                #expect(error?.code == .networkConnectionLost)
                #expect(leftAtCompletion.isEmpty)
            }
        }
    }
}
