import Courier
import CourierMockServer
import Crypto
import Foundation
import NIOConcurrencyHelpers

/// Hex SHA-256 of `data`.
func sha256Hex(_ data: Data) -> String {
    SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
}

/// A private (0700) temporary directory for one test, removed by the caller. Private so that Courier accepts it as
/// a download folder whatever the umask.
func makeTemporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("courier-test-\(UUID().uuidString)")
    try FileManager.default.createDirectory(
        at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    return url
}

/// Writes `length` pattern bytes (byte i == i % 251, as MockBody.pattern) to a new file; returns it and its SHA-256.
func writePatternFile(length: Int, in directory: URL) throws -> (url: URL, sha256: String) {
    let url = directory.appendingPathComponent("upload-\(length).bin")
    _ = FileManager.default.createFile(atPath: url.path, contents: nil)
    let handle = try FileHandle(forWritingTo: url)
    var hasher = SHA256()
    var offset = 0
    while offset < length {
        let count = min(1 << 20, length - offset)
        let chunk = MockBody.patternBytes(offset: Int64(offset), count: count)
        hasher.update(data: chunk)
        try handle.write(contentsOf: chunk)
        offset += count
    }
    try handle.close()
    return (url, hasher.finalize().map { String(format: "%02x", $0) }.joined())
}

/// Checks that the file at `url` holds exactly `length` pattern bytes.
func fileHoldsPattern(_ url: URL, length: Int64) throws -> Bool {
    let handle = try FileHandle(forReadingFrom: url)
    defer { try? handle.close() }
    var offset: Int64 = 0
    while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty {
        if chunk != MockBody.patternBytes(offset: offset, count: chunk.count) { return false }
        offset += Int64(chunk.count)
    }
    return offset == length
}

extension URLSession {
    /// Downloads `url` expecting the transfer to fail part-way, and returns the resume data its error carries
    /// (`nil` when it succeeded or carried none).
    func resumeDataOfFailedDownload(from url: URL) async -> Data? {
        do {
            _ = try await download(from: url)
            return nil
        } catch {
            return (error as? URLError)?.downloadTaskResumeData
        }
    }
}

/// The files left in a download directory.
func filesIn(_ directory: URL) -> [String] {
    (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
}

/// The bytes written so far into the files of `courier get`'s private folders (`.courier-XXXXXX`) in `directory`:
/// the folder itself appears before the download has a file in it.
func bytesInRunFolders(_ directory: URL) -> Int {
    var total = 0
    for folder in filesIn(directory) where folder.hasPrefix(".courier-") {
        let url = directory.appendingPathComponent(folder)
        for name in filesIn(url) {
            let attributes = try? FileManager.default.attributesOfItem(atPath: url.appendingPathComponent(name).path)
            total += (attributes?[.size] as? Int) ?? 0
        }
    }
    return total
}

/// The files left in a download directory once deletions Courier runs in the background (partial files a server's
/// answer made useless) had time to happen: polls for up to 5 seconds while files remain.
func settledFilesIn(_ directory: URL) async -> [String] {
    var files = filesIn(directory)
    for _ in 0..<250 where !files.isEmpty {
        try? await Task.sleep(for: .milliseconds(20))
        files = filesIn(directory)
    }
    return files
}

/// A resource route that answers ranges itself: `first` may shape the first response (to drop it part-way).
func serveRanges(
    on server: MockServer,
    path: String,
    body: MockBody,
    etag: String? = "\"v1\"",
    first: (@Sendable (inout MockResponse) -> Void)? = nil
) {
    let calls = NIOLockedValueBox(0)
    server.route(path) { request in
        let call = calls.withLockedValue { count -> Int in
            count += 1
            return count
        }
        let length = body.length
        var headers: [(name: String, value: String)] = [("Accept-Ranges", "bytes")]
        if let etag { headers.append(("ETag", etag)) }
        if let range = request.header("Range"), range.hasPrefix("bytes="), range.hasSuffix("-"),
            let start = Int64(range.dropFirst(6).dropLast()), start < length
        {
            headers.append(("Content-Range", "bytes \(start)-\(length - 1)/\(length)"))
            let slice = MockBody.patternBytes(offset: start, count: Int(length - start))
            return MockResponse(status: 206, headers: headers, body: .data(slice))
        }
        var response = MockResponse(status: 200, headers: headers, body: body)
        if call == 1 { first?(&response) }
        return response
    }
}

/// A download delegate that records events and keeps a copy of the finished file.
final class DownloadRecorder: NSObject, URLSessionDownloadDelegate, @unchecked Sendable {
    struct Snapshot {
        var writes: [(Int64, Int64, Int64)] = []
        var resumedAt: [(Int64, Int64)] = []
        var finishedFileExisted = false
        /// The bytes `didWriteData` had reported when `didFinishDownloadingTo` came.
        var writtenWhenFinished: Int64 = 0
        var finishedLocation: URL?
        var copiedTo: URL?
        var error: URLError?
        var completed = false
        var resumeData: Data? { error?.downloadTaskResumeData }
    }

    private let state = NIOLockedValueBox<(Snapshot, [CheckedContinuation<Void, Never>])>((Snapshot(), []))
    let copyDirectory: URL

    init(copyDirectory: URL) {
        self.copyDirectory = copyDirectory
    }

    var snapshot: Snapshot { state.withLockedValue { $0.0 } }

    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL) {
        let copy = copyDirectory.appendingPathComponent("finished-\(downloadTask.taskIdentifier)-\(UUID().uuidString)")
        let existed = FileManager.default.fileExists(atPath: location.path)
        try? FileManager.default.copyItem(at: location, to: copy)
        state.withLockedValue { state in
            state.0.finishedFileExisted = existed
            state.0.writtenWhenFinished = state.0.writes.last?.1 ?? 0
            state.0.finishedLocation = location
            state.0.copiedTo = copy
        }
    }

    func urlSession(
        _ session: URLSession,
        downloadTask: URLSessionDownloadTask,
        didWriteData bytesWritten: Int64,
        totalBytesWritten: Int64,
        totalBytesExpectedToWrite: Int64
    ) {
        state.withLockedValue { $0.0.writes.append((bytesWritten, totalBytesWritten, totalBytesExpectedToWrite)) }
    }

    func urlSession(
        _ session: URLSession,
        downloadTask: URLSessionDownloadTask,
        didResumeAtOffset fileOffset: Int64,
        expectedTotalBytes: Int64
    ) {
        state.withLockedValue { $0.0.resumedAt.append((fileOffset, expectedTotalBytes)) }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let waiters = state.withLockedValue { state in
            state.0.error = error as? URLError
            state.0.completed = true
            defer { state.1 = [] }
            return state.1
        }
        for waiter in waiters { waiter.resume() }
    }

    func waitForCompletion() async {
        await withCheckedContinuation { continuation in
            let done = state.withLockedValue { state -> Bool in
                if state.0.completed { return true }
                state.1.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }
}
