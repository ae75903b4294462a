import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

/// What a resumed download does with a 206 whose body is not the range it announced: it must never append bytes
/// that are not the representation's, nor report a file complete that is not.
@Suite("Resumed ranges")
struct ResumedRangeTests {
    private let length = 300_000
    private let cut = 100_000

    /// The first answer: the pattern with a strong validator, dropped after `cut` bytes (gives resume data).
    private func interrupted() -> MockResponse {
        var first = MockResponse(
            headers: [("ETag", "\"v1\""), ("Accept-Ranges", "bytes")], body: .pattern(length: Int64(length)))
        first.closeAfterBodyBytes = cut
        return first
    }

    /// A 206 framed by the connection's close (no `Content-Length`, no chunking) that closes after `sent` of the
    /// range's bytes: HTTP/1.1 cannot tell that body from a complete one, but its `Content-Range` can.
    @Test func aRangeCutShortByTheCloseFailsWithResumeDataInsteadOfCompleting() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let sent = 50_000
        try await withServer { server in
            var head = "HTTP/1.1 206 Partial Content\r\nETag: \"v1\"\r\n"
            head += "Content-Range: bytes \(cut)-\(length - 1)/\(length)\r\nConnection: close\r\n\r\n"
            var short = MockResponse()
            short.raw = Data(head.utf8) + MockBody.patternBytes(offset: Int64(cut), count: sent)
            let rest = MockResponse(
                status: 206,
                headers: [("ETag", "\"v1\""), ("Content-Range", "bytes \(cut + sent)-\(length - 1)/\(length)")],
                body: .data(MockBody.patternBytes(offset: Int64(cut + sent), count: length - cut - sent)))
            server.enqueue(interrupted(), short, rest)
            let downloads = directory.appendingPathComponent("downloads")
            let session = makeSession { $0.courierDownloadDirectory = downloads }
            let firstResume = try #require(await session.resumeDataOfFailedDownload(from: server.url("/s")))
            var secondResume: Data?
            do {
                let (url, _) = try await session.download(resumeFrom: firstResume)
                Issue.record("a short range completed the download: \(try Data(contentsOf: url).count) bytes")
            } catch let error as URLError {
                #expect(error.code == .networkConnectionLost)
                secondResume = error.downloadTaskResumeData
            }
            // The bytes that did come are kept: the next resume asks for the rest, and the file is exact.
            let (url, _) = try await session.download(resumeFrom: try #require(secondResume))
            #expect(try fileHoldsPattern(url, length: Int64(length)))
            try FileManager.default.removeItem(at: url)
            #expect(server.requests.map { $0.header("Range") } == [nil, "bytes=\(cut)-", "bytes=\(cut + sent)-"])
            #expect(await settledFilesIn(downloads).isEmpty)
        }
    }

    /// A 206 in a content coding: its decoded bytes are not the representation bytes its range counts (and a
    /// server that encodes the range of the encoded stream sends bytes no decoder can start in the middle of). The
    /// partial file is dropped and the whole representation asked for again.
    @Test func anEncodedRangeIsNotAppendedButFetchedWhole() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await withServer { server in
            let range = [UInt8](MockBody.patternBytes(offset: Int64(cut), count: length - cut))
            // Chunked: a Content-Length (the encoded size) would not match the range and refuse it on that alone.
            var encoded = MockResponse(
                status: 206,
                headers: [
                    ("ETag", "\"v1\""), ("Content-Encoding", "gzip"),
                    ("Content-Range", "bytes \(cut)-\(length - 1)/\(length)"),
                ],
                body: .data(Data(Deflater.compress(range, as: .gzip))))
            encoded.chunked = true
            let whole = MockResponse(headers: [("ETag", "\"v1\"")], body: .pattern(length: Int64(length)))
            server.enqueue(interrupted(), encoded, whole)
            let downloads = directory.appendingPathComponent("downloads")
            let session = makeSession { $0.courierDownloadDirectory = downloads }
            let resumeData = try #require(await session.resumeDataOfFailedDownload(from: server.url("/e")))
            let (url, _) = try await session.download(resumeFrom: resumeData)
            #expect(try fileHoldsPattern(url, length: Int64(length)))
            try FileManager.default.removeItem(at: url)
            #expect(server.requests.map { $0.header("Range") } == [nil, "bytes=\(cut)-", nil])
            #expect(await settledFilesIn(downloads).isEmpty)
        }
    }

    /// A 206 that gives no complete length (`/*`) and ends before the byte the interrupted response said was the
    /// last: appending it would deliver a file without its end as complete. The whole representation is fetched
    /// again instead.
    @Test func aShortRangeOfUnknownTotalIsNotAppendedButFetchedWhole() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await withServer { server in
            let sent = 50_000
            let short = MockResponse(
                status: 206,
                headers: [("ETag", "\"v1\""), ("Content-Range", "bytes \(cut)-\(cut + sent - 1)/*")],
                body: .data(MockBody.patternBytes(offset: Int64(cut), count: sent)))
            let whole = MockResponse(headers: [("ETag", "\"v1\"")], body: .pattern(length: Int64(length)))
            server.enqueue(interrupted(), short, whole)
            let downloads = directory.appendingPathComponent("downloads")
            let session = makeSession { $0.courierDownloadDirectory = downloads }
            let resumeData = try #require(await session.resumeDataOfFailedDownload(from: server.url("/u")))
            let (url, _) = try await session.download(resumeFrom: resumeData)
            #expect(try fileHoldsPattern(url, length: Int64(length)))
            try FileManager.default.removeItem(at: url)
            #expect(server.requests.map { $0.header("Range") } == [nil, "bytes=\(cut)-", nil])
            #expect(await settledFilesIn(downloads).isEmpty)
        }
    }

    /// A download of a range the app asked for (`Range: bytes=1000-`) holds the representation from byte 1,000:
    /// resume data would continue it at its own length, splicing two parts of the representation. It fails without
    /// resume data, and leaves no partial file behind.
    @Test func aRangeTheAppAskedForGivesNoResumeData() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await withServer { server in
            let start = 1_000
            var ranged = MockResponse(
                status: 206,
                headers: [("ETag", "\"v1\""), ("Content-Range", "bytes \(start)-\(length - 1)/\(length)")],
                body: .data(MockBody.patternBytes(offset: Int64(start), count: length - start)))
            ranged.closeAfterBodyBytes = cut
            server.enqueue(ranged)
            let downloads = directory.appendingPathComponent("downloads")
            let session = makeSession { $0.courierDownloadDirectory = downloads }
            var request = URLRequest(url: server.url("/r"))
            request.setValue("bytes=\(start)-", forHTTPHeaderField: "Range")
            do {
                _ = try await session.download(for: request)
                Issue.record("the cut download completed")
            } catch let error as URLError {
                #expect(error.code == .networkConnectionLost)
                #expect(error.downloadTaskResumeData == nil)
            }
            #expect(await settledFilesIn(downloads).isEmpty)
        }
    }
}
