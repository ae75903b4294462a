import CourierHTTP
import CourierMockServer
import CourierTestSupport
import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import Courier

@Suite("Downloads")
struct DownloadTests {
    @Test(arguments: [Int64(0), 1, 1 << 20, 100 << 20])
    func downloadsAreByteExactAndTheTemporaryFileGoes(length: Int64) async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let downloads = directory.appendingPathComponent("downloads")
        try await withServer { server in
            server.route("/file", response: MockResponse(body: .pattern(length: length)))
            let recorder = DownloadRecorder(copyDirectory: directory)
            let session = makeSession(delegate: recorder) { $0.courierDownloadDirectory = downloads }
            let task = session.downloadTask(with: server.url("/file"))
            task.resume()
            await recorder.waitForCompletion()
            let snapshot = recorder.snapshot
            #expect(snapshot.error == nil)
            #expect(snapshot.finishedFileExisted)
            let copy = try #require(snapshot.copiedTo)
            #expect(try fileHoldsPattern(copy, length: length))
            let location = try #require(snapshot.finishedLocation)
            #expect(!FileManager.default.fileExists(atPath: location.path))
            #expect(filesIn(downloads).isEmpty)
            #expect(snapshot.writes.last?.1 ?? 0 == length)
            #expect(snapshot.writtenWhenFinished == length, "every write is reported before the file is handed over")
            #expect(snapshot.writes.map(\.0).reduce(0, +) == length)
            #expect(snapshot.writes.allSatisfy { $0.2 == length })
            #expect(task.countOfBytesReceived == length)
            #expect(task.progress.completedUnitCount == length)
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func unknownLengthIsReportedAsMinusOne(over wire: WireProtocol) async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await withServer(wire) { server in
            var chunked = MockResponse(body: .pattern(length: 100_000))
            chunked.chunked = true
            server.route("/c", response: chunked)
            let recorder = DownloadRecorder(copyDirectory: directory)
            let session = makeSession(delegate: recorder) { $0.courierDownloadDirectory = directory }
            session.downloadTask(with: server.url("/c")).resume()
            await recorder.waitForCompletion()
            let writes = recorder.snapshot.writes
            #expect(!writes.isEmpty)
            #expect(writes.last?.1 == 100_000)
            #expect(writes.allSatisfy { $0.2 == NSURLSessionTransferSizeUnknown })
            let finished = try #require(recorder.snapshot.copiedTo)
            #expect(try fileHoldsPattern(finished, length: 100_000))
        }
    }

    /// A gzip body's Content-Length counts the compressed bytes, the task the decoded ones: the expected length is
    /// unknown (Darwin's -1), never a total the written bytes overrun.
    @Test(arguments: WireProtocol.allCases)
    func aCompressedBodysLengthIsUnknown(over wire: WireProtocol) async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let text = Data(String(repeating: "compressible text ", count: 5000).utf8)
        let compressed = Data(Deflater.compress(Array(text), as: .gzip))
        try await withServer(wire) { server in
            server.route(
                "/gz", response: MockResponse(headers: [("Content-Encoding", "gzip")], body: .data(compressed)))
            let recorder = DownloadRecorder(copyDirectory: directory)
            let session = makeSession(delegate: recorder) { $0.courierDownloadDirectory = directory }
            defer { session.finishTasksAndInvalidate() }
            let task = session.downloadTask(with: server.url("/gz"))
            task.resume()
            await recorder.waitForCompletion()
            let snapshot = recorder.snapshot
            #expect(snapshot.error == nil)
            #expect((task.response as? HTTPURLResponse)?.expectedContentLength == Int64(compressed.count))
            #expect(!snapshot.writes.isEmpty)
            #expect(snapshot.writes.allSatisfy { $0.2 == NSURLSessionTransferSizeUnknown })
            #expect(snapshot.writes.last?.1 == Int64(text.count))
            #expect(task.countOfBytesExpectedToReceive == NSURLSessionTransferSizeUnknown)
            #expect(task.countOfBytesReceived == Int64(text.count))
            #expect(task.progress.completedUnitCount == task.progress.totalUnitCount)
            let finished = try #require(snapshot.copiedTo)
            #expect(try Data(contentsOf: finished) == text)

            // A data task counts the same way.
            var dataTask: URLSessionDataTask?
            let outcome = await session.runDataTask(URLRequest(url: server.url("/gz"))) { dataTask = $0 }
            #expect(outcome.data == text)
            #expect(dataTask?.countOfBytesExpectedToReceive == NSURLSessionTransferSizeUnknown)
            #expect(dataTask?.countOfBytesReceived == Int64(text.count))
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func completionHandlerOwnsTheFileOnlyWhileItRuns(over wire: WireProtocol) async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await withServer(wire) { server in
            server.route("/f", response: MockResponse(body: .pattern(length: 5000)))
            let session = makeSession { $0.courierDownloadDirectory = directory }
            let location: URL? = await withCheckedContinuation { continuation in
                session.downloadTask(with: server.url("/f")) { url, response, error in
                    #expect(error == nil)
                    #expect((response as? HTTPURLResponse)?.statusCode == 200)
                    if let url { #expect((try? fileHoldsPattern(url, length: 5000)) == true) }
                    continuation.resume(returning: url)
                }.resume()
            }
            let url = try #require(location)
            try await Task.sleep(for: .milliseconds(50))
            #expect(!FileManager.default.fileExists(atPath: url.path))
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func asyncDownloadHandsTheFileToTheCaller(over wire: WireProtocol) async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await withServer(wire) { server in
            server.route("/f", response: MockResponse(body: .pattern(length: 777_777)))
            let session = makeSession { $0.courierDownloadDirectory = directory }
            let (url, response) = try await session.download(from: server.url("/f"))
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            #expect(try fileHoldsPattern(url, length: 777_777))
            try FileManager.default.removeItem(at: url)
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func unwritableDirectoryIsCannotCreateFileAndLeavesNothing(over wire: WireProtocol) async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // A regular file where the download directory should be: nothing can be created below it.
        let blocker = directory.appendingPathComponent("not-a-directory")
        _ = FileManager.default.createFile(atPath: blocker.path, contents: Data("x".utf8))
        try await withServer(wire) { server in
            server.route("/f", response: MockResponse(body: .pattern(length: 100_000)))
            let session = makeSession { $0.courierDownloadDirectory = blocker.appendingPathComponent("downloads") }
            do {
                _ = try await session.download(from: server.url("/f"))
                Issue.record("expected an error")
            } catch let error as URLError {
                #expect(error.code == .cannotCreateFile)
            }
            #expect(filesIn(directory) == ["not-a-directory"])
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func droppedDownloadWithoutValidatorsLeavesNoFileAndNoResumeData(over wire: WireProtocol) async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await withServer(wire) { server in
            var dropped = MockResponse(body: .pattern(length: 200_000))
            dropped.closeAfterBodyBytes = 50_000
            server.route("/d", response: dropped)
            let recorder = DownloadRecorder(copyDirectory: directory)
            let downloads = directory.appendingPathComponent("downloads")
            let session = makeSession(delegate: recorder) { $0.courierDownloadDirectory = downloads }
            session.downloadTask(with: server.url("/d")).resume()
            await recorder.waitForCompletion()
            #expect(recorder.snapshot.error?.code == .networkConnectionLost)
            #expect(recorder.snapshot.resumeData == nil)
            try await Task.sleep(for: .milliseconds(50))
            #expect(filesIn(downloads).isEmpty)
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func suspendAndResumeADownloadUsesOneRequest(over wire: WireProtocol) async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await withServer(wire) { server in
            var throttled = MockResponse(body: .pattern(length: 400_000))
            throttled.chunkSize = 20_000
            throttled.chunkDelay = .milliseconds(20)
            server.route("/t", response: throttled)
            let recorder = DownloadRecorder(copyDirectory: directory)
            let session = makeSession(delegate: recorder) { $0.courierDownloadDirectory = directory }
            let task = session.downloadTask(with: server.url("/t"))
            task.resume()
            while task.countOfBytesReceived == 0 { try await Task.sleep(for: .milliseconds(2)) }
            task.suspend()
            let atSuspend = task.countOfBytesReceived
            try await Task.sleep(for: .milliseconds(200))
            // Only bytes already read when the suspension took effect may still arrive.
            #expect(task.countOfBytesReceived - atSuspend < 200_000)
            task.resume()
            await recorder.waitForCompletion()
            let finished = try #require(recorder.snapshot.copiedTo)
            #expect(try fileHoldsPattern(finished, length: 400_000))
            #expect(server.requests(path: "/t").count == 1)
        }
    }
}

@Suite("Download edge cases")
struct DownloadEdgeCaseTests {
    @Test func aFullDiskIsCannotWriteToFile() async throws {
        // /dev/full accepts the open and fails every write with ENOSPC, like a full disk.
        let device = URL(fileURLWithPath: "/dev/full")
        let file = DownloadFile(url: device, handle: try FileHandle(forWritingTo: device))
        let result: Result<Void, TransferError> = await withCheckedContinuation { continuation in
            file.append(Data(repeating: 1, count: 4096)) { continuation.resume(returning: $0) }
        }
        guard case .failure(let error) = result else {
            Issue.record("writing to a full device must fail")
            return
        }
        #expect(error.urlErrorCode == .cannotWriteToFile)
    }

    @Test(arguments: WireProtocol.allCases)
    func dataTaskBecomesADownloadWithoutLosingBytes(over wire: WireProtocol) async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await withServer(wire) { server in
            server.route("/b", response: MockResponse(body: .pattern(length: 900_000)))
            let delegate = BecomingDownloadDelegate(copyDirectory: directory)
            let session = makeSession(delegate: delegate) { $0.courierDownloadDirectory = directory }
            let dataTask = session.dataTask(with: server.url("/b"))
            dataTask.resume()
            await delegate.recorder.waitForCompletion()
            let snapshot = delegate.recorder.snapshot
            #expect(snapshot.error == nil)
            let finished = try #require(snapshot.copiedTo)
            #expect(try fileHoldsPattern(finished, length: 900_000))
            let became = try #require(delegate.became.withLockedValue { $0 })
            #expect(became.data == dataTask.taskIdentifier)
            #expect(became.download != dataTask.taskIdentifier)
            #expect(dataTask.state == .completed)
            #expect(delegate.dataEvents.withLockedValue { $0 } == 0)
            #expect(server.requests.count == 1)
        }
    }

    /// The data task's own delegate (no session delegate at all) answers `.becomeDownload`: the download task's
    /// events must reach that delegate, as on Darwin, or the app never hears `didFinishDownloadingTo`.
    @Test func theTaskDelegateCarriesOverToTheDownloadTask() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await withServer { server in
            server.route("/b", response: MockResponse(body: .pattern(length: 200_000)))
            let delegate = BecomingDownloadDelegate(copyDirectory: directory)
            let session = makeSession { $0.courierDownloadDirectory = directory }
            let dataTask = session.dataTask(with: server.url("/b"))
            dataTask.delegate = delegate
            dataTask.resume()
            try await waitUntil { delegate.recorder.snapshot.completed }
            let snapshot = delegate.recorder.snapshot
            #expect(snapshot.completed)
            #expect(snapshot.error == nil)
            let finished = try #require(snapshot.copiedTo)
            #expect(try fileHoldsPattern(finished, length: 200_000))
            #expect(delegate.became.withLockedValue { $0 }?.data == dataTask.taskIdentifier)
            // Both tasks let go of the delegate once done with it.
            try await waitUntil { dataTask.delegate == nil }
            session.finishTasksAndInvalidate()
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func becomingADownloadWhileTheSessionIsInvalidatedStillDeliversEverything(over wire: WireProtocol) async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await withServer(wire) { server in
            server.route("/b", response: MockResponse(body: .pattern(length: 300_000)))
            let delegate = BecomingDownloadDelegate(copyDirectory: directory)
            delegate.invalidateWhileDeciding = true
            let session = makeSession(delegate: delegate) { $0.courierDownloadDirectory = directory }
            session.dataTask(with: server.url("/b")).resume()
            await delegate.recorder.waitForCompletion()
            let finished = try #require(delegate.recorder.snapshot.copiedTo)
            #expect(try fileHoldsPattern(finished, length: 300_000))
            for _ in 0..<200 where session.delegate != nil { try await Task.sleep(for: .milliseconds(10)) }
            #expect(delegate.invalidated.withLockedValue { $0 })
        }
    }
}

/// Turns every data task into a download and records what follows.
final class BecomingDownloadDelegate: NSObject, URLSessionDataDelegate, URLSessionDownloadDelegate, @unchecked Sendable
{
    let recorder: DownloadRecorder
    let became = NIOLockedValueBox<(data: Int, download: Int)?>(nil)
    let dataEvents = NIOLockedValueBox(0)
    let invalidated = NIOLockedValueBox(false)
    var invalidateWhileDeciding = false

    init(copyDirectory: URL) {
        recorder = DownloadRecorder(copyDirectory: copyDirectory)
    }

    func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        if invalidateWhileDeciding { session.finishTasksAndInvalidate() }
        completionHandler(.becomeDownload)
    }

    func urlSession(_ session: URLSession, didBecomeInvalidWithError error: (any Error)?) {
        // Only after the download delivered everything.
        let finished = recorder.snapshot.completed
        invalidated.withLockedValue { $0 = finished }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didBecome downloadTask: URLSessionDownloadTask)
    {
        became.withLockedValue { $0 = (dataTask.taskIdentifier, downloadTask.taskIdentifier) }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        dataEvents.withLockedValue { $0 += 1 }
    }

    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL) {
        recorder.urlSession(session, downloadTask: downloadTask, didFinishDownloadingTo: location)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        recorder.urlSession(session, task: task, didCompleteWithError: error)
    }
}
