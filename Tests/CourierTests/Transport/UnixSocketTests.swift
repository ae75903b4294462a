import Courier
import CourierMockServer
import Foundation
import Testing

/// `http+unix://` and `https+unix://`: a session talking to a local daemon over a Unix domain socket.
@Suite("Unix domain sockets")
struct UnixSocketTests {
    /// Runs `body` with a server listening on a socket in a private temporary folder.
    private func withSocketServer(
        _ scheme: MockServer.Scheme = .http, _ body: (MockServer, URL) async throws -> Void
    ) async throws {
        let folder = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("daemon.sock").path
        let server = MockServer(scheme: scheme, unixSocketPath: path)
        try await server.start()
        do {
            try await body(server, folder)
            try await server.shutdown()
        } catch {
            try? await server.shutdown()
            throw error
        }
    }

    @Test func aSessionTalksToADaemonOnItsSocket() async throws {
        try await withSocketServer { server, _ in
            server.route("/v1/info", response: .ok("{\"ok\":true}"))
            let url = server.url("/v1/info?all=1")
            #expect(url.scheme == "http+unix")
            let session = makeSession()
            defer { session.finishTasksAndInvalidate() }
            let first = await session.runDataTask(url)
            let second = await session.runDataTask(url)
            #expect(first.error == nil && second.error == nil)
            #expect(first.http?.statusCode == 200)
            #expect(first.data == Data("{\"ok\":true}".utf8))
            let requests = server.requests(path: "/v1/info")
            try #require(requests.count == 2)
            #expect(requests[0].target == "/v1/info?all=1")
            #expect(requests[0].header("Host") == "localhost")
            // Kept alive like any other connection.
            #expect(requests[0].connectionID == requests[1].connectionID)
        }
    }

    @Test func uploadsAndRedirectsStayOnTheSocket() async throws {
        try await withSocketServer { server, _ in
            server.route("/old", response: MockResponse(status: 307, headers: [("Location", "/new")]))
            server.route("/new", response: .ok("moved"))
            let session = makeSession()
            defer { session.finishTasksAndInvalidate() }
            var request = URLRequest(url: server.url("/old"))
            request.httpMethod = "POST"
            request.httpBody = Data("payload".utf8)
            let outcome = await session.runDataTask(request)
            #expect(outcome.data == Data("moved".utf8))
            #expect(server.requests(path: "/new").first?.body == Data("payload".utf8))
        }
    }

    /// A file's body goes over the socket whole (on a plain connection it is sent with `sendfile(2)`, which Linux
    /// supports to a Unix domain socket as to TCP).
    @Test func aFileUploadGoesOverTheSocketWhole() async throws {
        try await withSocketServer { server, folder in
            server.route("/upload", response: .ok("stored"))
            let (file, _) = try writePatternFile(length: 1_500_000, in: folder)
            let session = makeSession()
            defer { session.finishTasksAndInvalidate() }
            var request = URLRequest(url: server.url("/upload"))
            request.httpMethod = "PUT"
            let (data, response) = try await session.upload(for: request, fromFile: file)
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            #expect(data == Data("stored".utf8))
            let body = try #require(server.requests(path: "/upload").first?.body)
            #expect(body == (try Data(contentsOf: file)))
        }
    }

    @Test func tlsOverASocketChecksTheCertificateForLocalhost() async throws {
        try await withSocketServer(.https) { server, _ in
            server.route("/secure", response: .ok("secure"))
            let session = makeSession { $0.courierAdditionalTrustedCertificates = [Data(server.certificateDER)] }
            defer { session.finishTasksAndInvalidate() }
            let outcome = await session.runDataTask(server.url("/secure"))
            #expect(outcome.error == nil)
            #expect(outcome.data == Data("secure".utf8))
        }
    }

    @Test func aMissingSocketOrARelativePathFailsClearly() async throws {
        let session = makeSession()
        defer { session.finishTasksAndInvalidate() }
        let missing = await session.runDataTask(
            try #require(URL(string: "http+unix://%2Fnonexistent%2Fcourier.sock/x")))
        #expect(missing.urlError?.code == .cannotConnectToHost)
        let relative = await session.runDataTask(try #require(URL(string: "http+unix://relative.sock/x")))
        #expect(relative.urlError?.code == .badURL)
    }
}
