import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

@Suite("Resume data")
struct ResumeTests {
    /// Starts a throttled download, cancels it with resume data after some bytes, and returns the data (from the
    /// async method when `async`, else from the completion handler form).
    private func cancelMidway(
        session: URLSession,
        url: URL,
        after bytes: Int64,
        async: Bool = false
    ) async throws -> Data? {
        let task = session.downloadTask(with: url)
        task.resume()
        while task.countOfBytesReceived < bytes && task.state == .running {
            try await Task.sleep(for: .milliseconds(5))
        }
        if async { return await task.cancelByProducingResumeData() }
        return await withCheckedContinuation { continuation in
            task.cancel(byProducingResumeData: { continuation.resume(returning: $0) })
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func cancelProducesResumeDataAndTheResumedFileIsExact(over wire: WireProtocol) async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let length: Int64 = 2_000_000
        try await withServer(wire) { server in
            // The first answer never ends on its own (HTTP/1.1: it stalls after 500 kB; HTTP/2: about 15 s in all), so
            // that a test thread held up for seconds on a busy machine still cancels mid-body.
            serveRanges(on: server, path: "/r", body: .pattern(length: length)) {
                if wire == .http1 {
                    $0.stallAfterBodyBytes = 500_000
                } else {
                    $0.chunkSize = 4096
                    $0.chunkDelay = .milliseconds(30)
                }
            }
            let recorder = DownloadRecorder(copyDirectory: directory)
            let downloads = directory.appendingPathComponent("downloads")
            let session = makeSession(delegate: recorder) { $0.courierDownloadDirectory = downloads }
            let resumeData = try #require(
                try await cancelMidway(session: session, url: server.url("/r"), after: 100_000, async: true))
            // Darwin's key names, readable by any property-list tool.
            let plist = try #require(
                try PropertyListSerialization.propertyList(from: resumeData, format: nil) as? [String: Any]
            )
            let received = try #require(
                plist["NSURLSessionResumeBytesReceived"] as? Int64
                    ?? (plist["NSURLSessionResumeBytesReceived"] as? Int).map(Int64.init))
            #expect(received > 0)
            #expect(plist["NSURLSessionResumeEntityTag"] as? String == "\"v1\"")
            #expect(plist["NSURLSessionDownloadURL"] as? String == server.url("/r").absoluteString)
            #expect(filesIn(downloads).count == 1)

            await recorder.waitForCompletion()
            let resumedRecorder = DownloadRecorder(copyDirectory: directory)
            let resumedSession = makeSession(delegate: resumedRecorder) { $0.courierDownloadDirectory = downloads }
            resumedSession.downloadTask(withResumeData: resumeData).resume()
            await resumedRecorder.waitForCompletion()
            let snapshot = resumedRecorder.snapshot
            #expect(snapshot.error == nil)
            #expect(snapshot.resumedAt.first?.0 == received)
            #expect(snapshot.resumedAt.first?.1 == length)
            let finished = try #require(snapshot.copiedTo)
            #expect(try fileHoldsPattern(finished, length: length))
            let second = try #require(server.requests(path: "/r").last)
            #expect(second.header("Range") == "bytes=\(received)-")
            #expect(second.header("If-Range") == "\"v1\"")
            #expect(filesIn(downloads).isEmpty)
        }
    }

    @Test(arguments: [Int64(1), 65_536, 1_000_003])
    func droppedConnectionCarriesResumeDataInTheError(dropAt: Int64) async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let length: Int64 = 1_500_000
        try await withServer { server in
            serveRanges(on: server, path: "/d", body: .pattern(length: length)) {
                $0.closeAfterBodyBytes = Int(dropAt)
            }
            let downloads = directory.appendingPathComponent("downloads")
            let session = makeSession { $0.courierDownloadDirectory = downloads }
            var resumeData: Data?
            do {
                _ = try await session.download(from: server.url("/d"))
                Issue.record("expected the dropped connection to fail the download")
            } catch let error as URLError {
                #expect(error.code == .networkConnectionLost)
                resumeData = error.downloadTaskResumeData
            }
            let data = try #require(resumeData)
            let (url, _) = try await session.download(resumeFrom: data)
            #expect(try fileHoldsPattern(url, length: length))
            try FileManager.default.removeItem(at: url)
            #expect(filesIn(downloads).isEmpty)
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func serverIgnoringRangeRestartsFromZero(over wire: WireProtocol) async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let length: Int64 = 600_000
        try await withServer(wire) { server in
            var first = MockResponse(
                headers: [("ETag", "\"v1\""), ("Accept-Ranges", "bytes")],
                body: .pattern(length: length)
            )
            first.closeAfterBodyBytes = 200_000
            // The second answer ignores Range and sends the whole body again.
            server.enqueue(first, MockResponse(headers: [("ETag", "\"v1\"")], body: .pattern(length: length)))
            let downloads = directory.appendingPathComponent("downloads")
            let recorder = DownloadRecorder(copyDirectory: directory)
            let session = makeSession(delegate: recorder) { $0.courierDownloadDirectory = downloads }
            session.downloadTask(with: server.url("/x")).resume()
            await recorder.waitForCompletion()
            let data = try #require(recorder.snapshot.resumeData)
            let resumed = DownloadRecorder(copyDirectory: directory)
            let resumedSession = makeSession(delegate: resumed) { $0.courierDownloadDirectory = downloads }
            resumedSession.downloadTask(withResumeData: data).resume()
            await resumed.waitForCompletion()
            #expect(resumed.snapshot.resumedAt.first?.0 == 0)
            let finished = try #require(resumed.snapshot.copiedTo)
            #expect(try fileHoldsPattern(finished, length: length))
            #expect(server.requests.last?.header("Range") != nil)
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func changedValidatorGivesTheNewBodyWhole(over wire: WireProtocol) async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await withServer(wire) { server in
            let old = MockBody.patternBytes(offset: 0, count: 400_000)
            let new = Data((0..<300_000).map { UInt8(($0 * 7) % 256) })
            var first = MockResponse(
                headers: [("ETag", "\"old\""), ("Accept-Ranges", "bytes")],
                body: .data(old)
            )
            first.closeAfterBodyBytes = 100_000
            server.enqueue(first)
            let downloads = directory.appendingPathComponent("downloads")
            let session = makeSession { $0.courierDownloadDirectory = downloads }
            let resumeData = await session.resumeDataOfFailedDownload(from: server.url("/v"))
            let data = try #require(resumeData)
            server.serveResource("/v", body: .data(new), etag: "\"new\"")
            let (url, response) = try await session.download(resumeFrom: data)
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            #expect(try Data(contentsOf: url) == new)
            try FileManager.default.removeItem(at: url)
        }
    }

    /// A server (or CDN) that ignores `If-Range` answers the resume of a changed resource with a range of the new
    /// version. Appending it would make a file that is neither version; the download must start over instead.
    @Test(arguments: ["new-etag", "no-etag", "new-length", "new-date"])
    func serverIgnoringIfRangeNeverSplicesTwoVersions(kind: String) async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let oldDate = "Tue, 15 Nov 1994 12:45:26 GMT"
        let newDate = "Wed, 16 Nov 1994 12:45:26 GMT"
        try await withServer { server in
            let old = MockBody.patternBytes(offset: 0, count: 400_000)
            let newLength = kind == "new-length" ? 450_000 : 400_000
            let new = Data((0..<newLength).map { UInt8(($0 * 7) % 256) })
            // A `Date` well after `Last-Modified` makes the date a strong validator (RFC 9110 §8.8.2.2).
            let validator: [(name: String, value: String)] =
                kind == "new-date"
                ? [("Last-Modified", oldDate), ("Date", "Thu, 17 Nov 1994 12:45:26 GMT")] : [("ETag", "\"v1\"")]
            var first = MockResponse(headers: validator + [("Accept-Ranges", "bytes")], body: .data(old))
            first.closeAfterBodyBytes = 100_000
            // The resumed request's answer: a range of the new version, whatever If-Range said.
            let changedValidator: [(name: String, value: String)] =
                switch kind {
                case "new-etag": [("ETag", "\"v2\"")]
                case "new-date": [("Last-Modified", newDate)]
                case "new-length": [("ETag", "\"v1\"")]
                default: []
                }
            var spliced = MockResponse(
                status: 206,
                headers: changedValidator + [("Content-Range", "bytes 100000-\(newLength - 1)/\(newLength)")],
                body: .data(new)
            )
            spliced.bodyRange = 100_000..<Int64(newLength)
            let whole = MockResponse(headers: changedValidator, body: .data(new))
            server.enqueue(first, spliced, whole)
            let downloads = directory.appendingPathComponent("downloads")
            let session = makeSession { $0.courierDownloadDirectory = downloads }
            let resumeData = await session.resumeDataOfFailedDownload(from: server.url("/s"))
            let (url, _) = try await session.download(resumeFrom: try #require(resumeData))
            #expect(try Data(contentsOf: url) == new)
            try FileManager.default.removeItem(at: url)
            let requests = server.requests
            try #require(requests.count == 3)
            #expect(requests[1].header("Range") == "bytes=100000-")
            #expect(requests[2].header("Range") == nil)
            #expect(await settledFilesIn(downloads).isEmpty)
        }
    }

    @Test(arguments: ["416", "wrong-start", "garbage"])
    func unusableRangeAnswersRetryCleanly(kind: String) async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let length: Int64 = 300_000
        try await withServer { server in
            var first = MockResponse(
                headers: [("ETag", "\"v1\""), ("Accept-Ranges", "bytes")],
                body: .pattern(length: length)
            )
            first.closeAfterBodyBytes = 100_000
            let bad: MockResponse
            switch kind {
            case "416":
                bad = MockResponse(status: 416, headers: [("Content-Range", "bytes */\(length)")])
            case "wrong-start":
                bad = MockResponse(
                    status: 206,
                    headers: [("Content-Range", "bytes 5-\(length - 1)/\(length)")],
                    body: .data(MockBody.patternBytes(offset: 5, count: Int(length - 5)))
                )
            default:
                bad = MockResponse(
                    status: 206, headers: [("Content-Range", "lots of bytes")], body: .data(Data("zz".utf8)))
            }
            let whole = MockResponse(headers: [("ETag", "\"v1\"")], body: .pattern(length: length))
            server.enqueue(first, bad, whole)
            let downloads = directory.appendingPathComponent("downloads")
            let session = makeSession { $0.courierDownloadDirectory = downloads }
            let resumeData = await session.resumeDataOfFailedDownload(from: server.url("/z"))
            let (url, _) = try await session.download(resumeFrom: try #require(resumeData))
            #expect(try fileHoldsPattern(url, length: length))
            try FileManager.default.removeItem(at: url)
            let requests = server.requests
            try #require(requests.count == 3)
            #expect(requests[2].header("Range") == nil)
            #expect(requests[2].header("If-Range") == nil)
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func notResumableDownloadsGiveNilResumeDataAndNoFile(over wire: WireProtocol) async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await withServer(wire) { server in
            var throttled = MockResponse(body: .pattern(length: 1_000_000))  // no ETag, no Last-Modified
            throttled.chunkSize = 20_000
            throttled.chunkDelay = .milliseconds(20)
            server.route("/n", response: throttled)
            let downloads = directory.appendingPathComponent("downloads")
            let session = makeSession { $0.courierDownloadDirectory = downloads }
            let data = try await cancelMidway(session: session, url: server.url("/n"), after: 50_000)
            #expect(data == nil)
            try await Task.sleep(for: .milliseconds(50))
            #expect(await settledFilesIn(downloads).isEmpty)
        }
    }

    @Test(arguments: [
        "empty", "garbage", "traversal", "slash", "too-many-bytes", "missing-file", "array", "not-a-download-file",
        "linked-folder", "deeply-nested",
    ])
    func hostileResumeDataFailsClearlyAndTouchesNothingOutside(kind: String) async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let downloads = directory.appendingPathComponent("downloads")
        try FileManager.default.createDirectory(at: downloads, withIntermediateDirectories: true)
        let outside = directory.appendingPathComponent("victim.txt")
        try Data("precious".utf8).write(to: outside)
        let partial = downloads.appendingPathComponent("CFNetworkDownload_partial.tmp")
        try Data(repeating: 1, count: 10).write(to: partial)
        // A folder of the user's own that a planted link at the download folder's path would lead to.
        let elsewhere = directory.appendingPathComponent("elsewhere")
        try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
        let elsewhereFile = elsewhere.appendingPathComponent("CFNetworkDownload_other.tmp")
        try Data(repeating: 2, count: 10).write(to: elsewhereFile)
        var folder = downloads
        // Not a download file, though in the download folder (courierd keeps its lock in the same fallback folder).
        let lockFile = downloads.appendingPathComponent("courierd.lock")
        try Data("lock".utf8).write(to: lockFile)
        func plist(name: String, bytes: Int64) throws -> Data {
            let request: [String: Any] = [
                "url": "http://127.0.0.1:9/x", "method": "GET", "headers": [String: String](), "timeoutInterval": 60.0,
            ]
            let dictionary: [String: Any] = [
                "NSURLSessionDownloadURL": "http://127.0.0.1:9/x",
                "NSURLSessionResumeBytesReceived": bytes,
                "NSURLSessionResumeEntityTag": "\"v1\"",
                "NSURLSessionResumeInfoTempFileName": name,
                "NSURLSessionResumeOriginalRequest": request,
                "NSURLSessionResumeCurrentRequest": request,
                "NSURLSessionResumeInfoVersion": 2,
            ]
            return try PropertyListSerialization.data(fromPropertyList: dictionary, format: .xml, options: 0)
        }
        let data: Data
        let expected: URLError.Code
        switch kind {
        case "empty":
            // swift-corelibs-foundation's test_invalidResumeDataForDownloadTask: unsupportedURL, as on Darwin.
            data = Data()
            expected = .unsupportedURL
        case "garbage":
            data = Data("definitely not a plist".utf8)
            expected = .unsupportedURL
        case "traversal":
            data = try plist(name: "../victim.txt", bytes: 3)
            expected = .unsupportedURL
        case "slash":
            data = try plist(name: "a/b", bytes: 3)
            expected = .unsupportedURL
        case "too-many-bytes":
            data = try plist(name: partial.lastPathComponent, bytes: 11)
            expected = .cannotDecodeRawData
        case "missing-file":
            data = try plist(name: "CFNetworkDownload_gone.tmp", bytes: 3)
            expected = .cannotOpenFile
        case "not-a-download-file":
            // A file in the folder that is not one of the library's download files (bytes 0: it would be cut).
            data = try plist(name: lockFile.lastPathComponent, bytes: 0)
            expected = .cannotDecodeRawData
        case "linked-folder":
            folder = directory.appendingPathComponent("link")
            try FileManager.default.createSymbolicLink(at: folder, withDestinationURL: elsewhere)
            data = try plist(name: elsewhereFile.lastPathComponent, bytes: 0)
            expected = .cannotOpenFile
        case "deeply-nested":
            // Foundation's XML scanner recurses into each element: this overflowed the stack of the caller of
            // download(resumeFrom:) before the data was refused.
            data = Data(("<plist version=\"1.0\">" + String(repeating: "<array>", count: 140_000)).utf8)
            expected = .unsupportedURL
        default:
            data = try PropertyListSerialization.data(fromPropertyList: ["a", "b"], format: .xml, options: 0)
            expected = .unsupportedURL
        }
        let session = makeSession { [folder] in $0.courierDownloadDirectory = folder }
        do {
            _ = try await session.download(resumeFrom: data)
            Issue.record("expected hostile resume data to fail")
        } catch let error as URLError {
            #expect(error.code == expected)
        }
        #expect(try Data(contentsOf: outside) == Data("precious".utf8))
        #expect(try Data(contentsOf: partial) == Data(repeating: 1, count: 10))
        #expect(try Data(contentsOf: elsewhereFile) == Data(repeating: 2, count: 10))
        #expect(try Data(contentsOf: lockFile) == Data("lock".utf8))
    }
}
