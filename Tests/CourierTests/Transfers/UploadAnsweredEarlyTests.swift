import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

/// A server may answer an upload before it read the body (a 413, a 401, a redirect) and close the connection: the
/// task gets the answer, and what the upload held for the rest of its body is let go.
@Suite("Uploads answered before their body was sent")
struct UploadAnsweredEarlyTests {
    /// A 64 MiB file to a server that stops reading and answers 413: the task completes with the 413, and no
    /// descriptor stays open on the file (on a plain connection the file goes out with `sendfile(2)` from a
    /// descriptor of its own, watched while a part of it is queued: the closed connection ends both).
    @Test(.timeLimit(.minutes(1)))
    func aFileUploadAnsweredEarlyLeavesNothingOpenOnTheFile() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (file, _) = try writePatternFile(length: 64 << 20, in: directory)
        let answer = "HTTP/1.1 413 Content Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        let steps: [MockTCPStep] = [.stopReading, .wait(.milliseconds(500)), .send(answer), .wait(.seconds(60))]
        try await withTCPServer(.script(steps)) { server in
            var request = URLRequest(url: try #require(URL(string: "http://127.0.0.1:\(server.port)/up")))
            request.httpMethod = "PUT"
            let session = makeSession()
            defer { session.invalidateAndCancel() }
            let (_, response) = try await session.upload(for: request, fromFile: file)
            #expect((response as? HTTPURLResponse)?.statusCode == 413)
            #expect(server.receivedBytes.count < 64 << 20)
            let deadline = ContinuousClock.now + .seconds(5)
            while Self.openDescriptors(on: file) > 0, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(Self.openDescriptors(on: file) == 0)
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
