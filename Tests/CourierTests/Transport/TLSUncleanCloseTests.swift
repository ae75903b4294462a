import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

/// Servers that end TCP without TLS's `close_notify` (many do, after `Connection: close`): the close decides what
/// the response was, as over plain TCP, never a TLS failure; but a body that only the close ends is complete only
/// with `close_notify` (RFC 9112 §9.8), since anyone on the path can end the TCP connection early.
@Suite("HTTPS: a close without close_notify")
struct TLSUncleanCloseTests {
    private func session(for server: MockServer) -> URLSession {
        makeSession { $0.courierAdditionalTrustedCertificates = [Data(server.certificateDER)] }
    }

    @Test func aBodyFramedByACleanCloseIsComplete() async throws {
        try await withServer(.https) { server in
            var response = MockResponse()
            response.raw = Data("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nhello, with close_notify".utf8)
            server.route("/c", response: response)
            let outcome = await session(for: server).runDataTask(server.url("/c"))
            #expect(outcome.error == nil)
            #expect(outcome.data == Data("hello, with close_notify".utf8))
        }
    }

    /// Nothing tells a body framed by a bare TCP close from one an attacker cut short: not a success (curl fails
    /// the same way).
    @Test func aBodyFramedByACloseWithoutCloseNotifyIsALostConnection() async throws {
        try await withServer(.https) { server in
            var response = MockResponse()
            response.raw = Data("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nhello, no close_notify".utf8)
            response.closesWithoutTLSCloseNotify = true
            server.route("/c", response: response)
            let outcome = await session(for: server).runDataTask(server.url("/c"))
            #expect(outcome.urlError?.code == .networkConnectionLost)
        }
    }

    /// A download of such a body never produces a file claimed complete.
    @Test func aDownloadFramedByACloseWithoutCloseNotifyFails() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await withServer(.https) { server in
            var response = MockResponse()
            let head = "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"
            response.raw = Data((head + String(repeating: "x", count: 5_000)).utf8)
            response.closesWithoutTLSCloseNotify = true
            server.route("/f", response: response)
            let session = makeSession {
                $0.courierAdditionalTrustedCertificates = [Data(server.certificateDER)]
                $0.courierDownloadDirectory = directory.appendingPathComponent("downloads")
            }
            do {
                _ = try await session.download(from: server.url("/f"))
                Issue.record("a body framed by an unclean TLS close completed the download")
            } catch let error as URLError {
                #expect(error.code == .networkConnectionLost)
            }
        }
    }

    @Test func aCompleteResponseBeforeTheCloseIsComplete() async throws {
        try await withServer(.https) { server in
            var response = MockResponse.ok("all of it")
            response.closeConnection = true
            response.closesWithoutTLSCloseNotify = true
            server.route("/l", response: response)
            let outcome = await session(for: server).runDataTask(server.url("/l"))
            #expect(outcome.error == nil)
            #expect(outcome.data == Data("all of it".utf8))
        }
    }

    /// A body cut short is a lost connection, which a download can resume, not `secureConnectionFailed`, which it
    /// cannot.
    @Test func aLengthFramedBodyCutShortIsALostConnectionWithResumeData() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await withServer(.https) { server in
            var response = MockResponse(
                headers: [("ETag", "\"v1\""), ("Accept-Ranges", "bytes")], body: .pattern(length: 100_000))
            response.closeAfterBodyBytes = 1_000
            response.closesWithoutTLSCloseNotify = true
            server.route("/d", response: response)
            let session = makeSession {
                $0.courierAdditionalTrustedCertificates = [Data(server.certificateDER)]
                $0.courierDownloadDirectory = directory.appendingPathComponent("downloads")
            }
            do {
                _ = try await session.download(from: server.url("/d"))
                Issue.record("a truncated body completed the download")
            } catch let error as URLError {
                #expect(error.code == .networkConnectionLost)
                #expect(error.downloadTaskResumeData != nil)
            }
            let data = await session.runDataTask(server.url("/d"))
            #expect(data.urlError?.code == .networkConnectionLost)
        }
    }
}
