import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import NIOConcurrencyHelpers
import Testing

/// An upload can end before its body was sent: a server answers it early (a 413, a 401, a redirect) and closes the
/// connection, or the app cancels it. What the upload held for the rest of its body is let go either way.
@Suite("Uploads that end before their body was sent")
struct UploadAnsweredEarlyTests {
    enum Ending: String, CaseIterable, Sendable {
        case answeredEarly
        case cancelled
    }

    /// A 64 MiB file to a server that stops reading (and answers 413, or the task is cancelled): no descriptor stays
    /// open on the file afterwards (on a plain connection the file goes out with `sendfile(2)` from a descriptor of
    /// its own, watched while a part of it is queued: the end of the connection ends both).
    @Test(.timeLimit(.minutes(1)), arguments: Ending.allCases)
    func aFileUploadEndedEarlyLeavesNothingOpenOnTheFile(ending: Ending) async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (file, _) = try writePatternFile(length: 64 << 20, in: directory)
        let answer = "HTTP/1.1 413 Content Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        let steps: [MockTCPStep] =
            ending == .answeredEarly
            ? [.stopReading, .wait(.milliseconds(500)), .send(answer), .wait(.seconds(60))]
            : [.stopReading, .wait(.seconds(60))]
        try await withTCPServer(.script(steps)) { server in
            var request = URLRequest(url: try #require(URL(string: "http://127.0.0.1:\(server.port)/up")))
            request.httpMethod = "PUT"
            let session = makeSession()
            defer { session.invalidateAndCancel() }
            let upload = RecordedUpload(request, fromFile: file, in: session)
            if ending == .cancelled {
                // Cancelled once a part of the file waits in the channel.
                try await upload.waitUntilSendingStalls()
                upload.task.cancel()
            }
            await upload.finished.wait()
            switch ending {
            case .answeredEarly:
                #expect(upload.statusCode == 413)
                #expect(upload.error == nil)
            case .cancelled:
                #expect((upload.error as? URLError)?.code == .cancelled)
            }
            #expect(server.receivedBytes.count < 64 << 20)
            let deadline = ContinuousClock.now + .seconds(5)
            while Self.openDescriptors(on: file) > 0, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(Self.openDescriptors(on: file) == 0)
        }
    }

    /// The server answers while the task is suspended, with a compressed body, and closes: the response waits whole
    /// for the task, its end still pending (decoded at the consumer's pace), while the connection is gone. The file is
    /// let go with the connection, not when the task is resumed (a task left suspended held it until its session
    /// ended); resumed, the task still gets the whole response. The server answers once the task is suspended (a
    /// signal, not a guessed time: a loaded machine takes seconds to start the upload).
    @Test(.timeLimit(.minutes(2)))
    func aSuspendedUploadWhoseConnectionClosesUnderAPendingResponseLetsGoOfTheFile() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (file, _) = try writePatternFile(length: 32 << 20, in: directory)
        let body = Deflater.gzipZeros(count: 4 << 20)
        let head =
            "HTTP/1.1 413 Content Too Large\r\nContent-Encoding: gzip\r\nContent-Length: \(body.count)\r\n"
            + "Connection: close\r\n\r\n"
        let suspended = MockTCPSignal()
        let steps: [MockTCPStep] = [
            .stopReading, .waitForSignal(suspended), .send(Array(head.utf8) + body), .closeWrite, .wait(.seconds(60)),
        ]
        try await withTCPServer(.script(steps)) { server in
            var request = URLRequest(url: try #require(URL(string: "http://127.0.0.1:\(server.port)/up")))
            request.httpMethod = "PUT"
            let session = makeSession { $0.courierMaximumDecompressionRatio = nil }
            defer { session.invalidateAndCancel() }
            let received = NIOLockedValueBox(0)
            let upload = RecordedUpload(request, fromFile: file, in: session) { data in
                received.withLockedValue { $0 = data?.count ?? -1 }
            }
            try await upload.waitUntilSendingStalls()
            upload.task.suspend()
            suspended.fire()
            let deadline = ContinuousClock.now + .seconds(20)
            while Self.openDescriptors(on: file) > 0, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(Self.openDescriptors(on: file) == 0)
            // The response's end was still pending when the connection closed: the task had not had the whole body
            // (else the end of the response, not the close, let the file go).
            #expect(upload.task.countOfBytesReceived < 4 << 20)
            upload.task.resume()
            await upload.finished.wait()
            #expect(upload.statusCode == 413)
            #expect(upload.error == nil)
            #expect(received.withLockedValue { $0 } == 4 << 20)
        }
    }

    /// How many of this process's descriptors are open on `file`.
    private static func openDescriptors(on file: URL) -> Int {
        let target = file.resolvingSymlinksInPath().path
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return descriptors.filter {
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)")) == target
        }.count
    }
}
