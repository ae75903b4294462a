import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

/// `uploadTask(with:fromFile:)` with what is not a plain file: a symbolic link uploads the file it names; a device is
/// refused before anything reaches the server.
@Suite("Upload file kinds")
struct UploadFileKindTests {
    @Test(arguments: WireProtocol.allCases)
    func aSymbolicLinkUploadsTheFileItNames(over wire: WireProtocol) async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (file, digest) = try writePatternFile(length: 200_000, in: directory)
        let link = directory.appendingPathComponent("link.bin")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: file)
        try await withServer(wire) { server in
            server.route("/up", method: "PUT", response: .status(204))
            var request = URLRequest(url: server.url("/up"))
            request.httpMethod = "PUT"
            let session = makeSession()
            defer { session.invalidateAndCancel() }
            let (_, response) = try await session.upload(for: request, fromFile: link)
            #expect((response as? HTTPURLResponse)?.statusCode == 204)
            let recorded = try #require(server.requests(path: "/up").first)
            #expect(recorded.bodyLength == 200_000)
            #expect(recorded.bodySHA256 == digest)
        }
    }

    /// `/dev/zero` reports a size of 0: it used to go out as a complete request with `Content-Length: 0` (which the
    /// server answered) before its first read failed the task with `badURL`.
    @Test(arguments: WireProtocol.allCases)
    func aDeviceIsCannotOpenFileAndNothingIsSent(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            server.route("/up", method: "PUT", response: .status(204))
            var request = URLRequest(url: server.url("/up"))
            request.httpMethod = "PUT"
            let session = makeSession()
            defer { session.invalidateAndCancel() }
            do {
                _ = try await session.upload(for: request, fromFile: URL(fileURLWithPath: "/dev/zero"))
                Issue.record("uploading /dev/zero succeeded")
            } catch let error as URLError {
                #expect(error.code == .cannotOpenFile)
            }
            #expect(server.requests.isEmpty)
        }
    }
}
