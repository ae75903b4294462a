import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

/// A file upload announces the file's length when its request starts; the body goes out later (here after the wait
/// for a `100 Continue` the server never sends). A file that changed size meanwhile must not go out as a complete
/// request with other bytes than announced: the task fails with `requestBodyStreamExhausted`, as a body stream that
/// disagrees with its length does, and the server never receives a whole body. (A writer that sends the file with
/// `sendfile(2)`, which sends whatever the file holds, must check the file's size itself: without the checks both
/// cases hung.)
@Suite("Uploads of a file that changes size")
struct UploadFileChangeTests {
    enum Change: String, CaseIterable, Sendable {
        case grown
        case shrunk
    }

    @Test(arguments: Change.allCases)
    func aFileThatChangedSizeAfterItsLengthWasSentFailsTheUpload(change: Change) async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // More than one read (512 KiB), so that a grown file shows only at the end.
        let length = 1_500_000
        let (file, _) = try writePatternFile(length: length, in: directory)
        // A server that reads and records, and never answers (until long after the test).
        try await withTCPServer(.script([.wait(.seconds(60))])) { server in
            var request = URLRequest(url: try #require(URL(string: "http://127.0.0.1:\(server.port)/up")))
            request.httpMethod = "PUT"
            request.setValue("100-continue", forHTTPHeaderField: "Expect")
            let session = makeSession()
            defer { session.invalidateAndCancel() }
            let upload = RecordedUpload(request, fromFile: file, in: session)
            // The head, with the length, is out; the body waits a second for the server's 100 Continue.
            try await waitUntil { String(decoding: server.receivedBytes, as: UTF8.self).contains("\r\n\r\n") }
            let handle = try FileHandle(forWritingTo: file)
            switch change {
            case .grown:
                try handle.seekToEnd()
                try handle.write(contentsOf: Data(count: 10))
            case .shrunk:
                try handle.truncate(atOffset: UInt64(length - 10))
            }
            try handle.close()
            await upload.finished.wait()
            let error = try #require(upload.error as? URLError)
            #expect(error.code == .requestBodyStreamExhausted)
            let expected = change == .grown ? "longer than the \(length) bytes" : "of the \(length) bytes"
            #expect(error.localizedDescription.contains(expected), "\(error.localizedDescription)")
            let received = server.receivedBytes
            let headEnd = try #require(received.firstRange(of: Array("\r\n\r\n".utf8))).upperBound
            #expect(received.count - headEnd < length, "the server received a whole body")
        }
    }

    /// A file truncated while a part of it is queued for the socket (a server that reads nothing leaves it queued):
    /// the upload fails with `requestBodyStreamExhausted` within moments, not at the request's timeout. (`sendfile(2)`
    /// would send nothing from the shortened file, and NIO would try again for ever once the socket drains.)
    @Test(.timeLimit(.minutes(1)))
    func aFileTruncatedUnderAQueuedPartFailsTheUploadAtOnce() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // Far more than the socket buffers of both ends hold.
        let length = 64 << 20
        let (file, _) = try writePatternFile(length: length, in: directory)
        try await withTCPServer(.silent) { server in
            var request = URLRequest(url: try #require(URL(string: "http://127.0.0.1:\(server.port)/up")))
            request.httpMethod = "PUT"
            let session = makeSession { $0.timeoutIntervalForRequest = 30 }
            defer { session.invalidateAndCancel() }
            let upload = RecordedUpload(request, fromFile: file, in: session)
            try await upload.waitUntilSendingStalls()
            #expect(upload.task.countOfBytesSent < Int64(length))
            try FileHandle(forWritingTo: file).truncate(atOffset: 0)
            let started = ContinuousClock.now
            await upload.finished.wait()
            #expect(ContinuousClock.now - started < .seconds(10))
            let error = try #require(upload.error as? URLError)
            #expect(error.code == .requestBodyStreamExhausted, "\(error)")
        }
    }
}
