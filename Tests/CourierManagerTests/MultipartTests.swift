import Courier
import CourierManager
import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

@Suite("Multipart form data")
struct MultipartTests {
    private func manager(_ server: MockServer) -> HTTPSessionManager {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.connectionProxyDictionary = [:]
        let manager = HTTPSessionManager(baseURL: server.url("/"), sessionConfiguration: configuration)
        manager.completionQueue = DispatchQueue(label: "multipart")
        manager.responseSerializer = HTTPResponseSerializer()
        return manager
    }

    /// Runs `body` with a server that answers `POST /upload` and a manager for it.
    private func withUploadServer(_ body: (MockServer, HTTPSessionManager) async throws -> Void) async throws {
        try await withServer { server in
            server.route("/upload", method: "POST", response: .ok("stored"))
            let manager = manager(server)
            defer { manager.invalidateSessionCancelingTasks(true, resetSession: false) }
            try await body(server, manager)
        }
    }

    /// POSTs a multipart body built by `body` to `/upload` and returns the error, if any.
    private func post(
        _ manager: HTTPSessionManager, parameters: [String: Any]? = nil,
        _ body: @escaping (MultipartFormData) throws -> Void
    ) async -> (any Error)? {
        await withCheckedContinuation { continuation in
            manager.POST(
                "upload", parameters: parameters, constructingBodyWith: body,
                success: { _, _ in continuation.resume(returning: nil) },
                failure: { _, error in continuation.resume(returning: error) })
        }
    }

    @Test func aPropertyListSerializersFieldsGoWithAMultipartPost() async throws {
        try await withUploadServer { server, manager in
            var serializer = PropertyListRequestSerializer()
            serializer.http.setAuthorizationHeaderField(username: "ada", password: "pw")
            manager.requestSerializer = serializer
            let error = await post(manager) { form in form.append(Data("v".utf8), name: "k") }
            #expect(error == nil)
            // Before: the multipart request was made by a fresh HTTPRequestSerializer and had no Authorization.
            #expect(server.requests(path: "/upload").first?.header("Authorization") == "Basic YWRhOnB3")
        }
    }

    @Test func theServerGetsEveryPartByteForByte() async throws {
        try await withUploadServer { server, manager in
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("part-\(UUID().uuidString).txt")
            try Data("file contents".utf8).write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            let error = await post(manager, parameters: ["title": "a b"]) { form in
                form.append(Data([0, 1, 2]), name: "blob", fileName: "b.bin", mimeType: "application/octet-stream")
                try form.append(fileURL: file, name: "doc")
                form.append(
                    InputStream(data: Data("streamed".utf8)), name: "s", fileName: "s.txt", length: 8,
                    mimeType: "text/plain")
            }
            #expect(error == nil)
            let request = try #require(server.requests(path: "/upload").first)
            let contentType = try #require(request.header("Content-Type"))
            #expect(contentType.hasPrefix("multipart/form-data; boundary=Boundary+"))
            let boundary = String(contentType.dropFirst("multipart/form-data; boundary=".count))
            var expected = Data()
            func add(_ text: String) { expected.append(Data(text.utf8)) }
            add("--\(boundary)\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\na b")
            add("\r\n--\(boundary)\r\nContent-Disposition: form-data; name=\"blob\"; filename=\"b.bin\"\r\n")
            add("Content-Type: application/octet-stream\r\n\r\n")
            expected.append(Data([0, 1, 2]))
            add(
                "\r\n--\(boundary)\r\nContent-Disposition: form-data; name=\"doc\"; filename=\"\(file.lastPathComponent)\"\r\n"
            )
            add("Content-Type: text/plain\r\n\r\nfile contents")
            add("\r\n--\(boundary)\r\nContent-Disposition: form-data; name=\"s\"; filename=\"s.txt\"\r\n")
            add("Content-Type: text/plain\r\n\r\nstreamed")
            add("\r\n--\(boundary)--\r\n")
            #expect(request.body == expected)
            #expect(request.header("Content-Length") == "\(expected.count)")
        }
    }

    /// A stream part the app closed before the body is written reads -1 with no error; Foundation on Linux traps
    /// when such a stream's `streamError` is read, which the copy's failure path did before.
    @Test func aClosedStreamPartFailsTheEncodingWithAnError() throws {
        let stream = InputStream(data: Data("streamed".utf8))
        stream.open()
        stream.close()
        let form = MultipartFormData()
        form.append(stream, name: "s", fileName: "s.txt", length: 8, mimeType: "text/plain")
        #expect(throws: CocoaError.self) { try form.encodedData() }
    }

    @Test func aSymbolicLinkToAFileSendsTheFile() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("link-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("real.txt")
        try Data("linked contents".utf8).write(to: file)
        let link = folder.appendingPathComponent("link.txt")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: file)
        let url = try #require(URL(string: "https://api.example/upload"))
        // Before: the link's own attributes (not a regular file) made append(fileURL:) throw.
        let request = try HTTPRequestSerializer().multipartFormRequest(method: "POST", url: url) { form in
            try form.append(fileURL: link, name: "doc")
        }
        let body = try #require(request.httpBody)
        let part = "filename=\"link.txt\"\r\nContent-Type: text/plain\r\n\r\nlinked contents\r\n--"
        #expect(body.range(of: Data(part.utf8)) != nil)
        #expect(request.value(forHTTPHeaderField: "Content-Length") == "\(body.count)")
    }

    @Test func aLargeBodyIsStreamedFromAFileThatIsAlreadyGone() async throws {
        let server = MockServer()
        try await server.start()
        defer { Task { try? await server.shutdown() } }
        server.route("/upload", method: "POST", response: .ok("stored"))
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("big-\(UUID().uuidString).bin")
        let contents = Data((0..<3_000_000).map { UInt8($0 % 253) })
        try contents.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let url = server.url("/upload")
        let request = try HTTPRequestSerializer().multipartFormRequest(method: "POST", url: url) { form in
            try form.append(fileURL: file, name: "big")
        }
        #expect(request.httpBody == nil)
        #expect(request.httpBodyStream != nil)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-multipart-\(getuid())")
        let left = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        #expect(left.isEmpty, "the temporary file's name is removed at once")
        let manager = manager(server)
        defer { manager.invalidateSessionCancelingTasks(true, resetSession: false) }
        let error: (any Error)? = await withCheckedContinuation { continuation in
            manager.dataTask(with: request) { _, _, error in continuation.resume(returning: error) }.resume()
        }
        #expect(error == nil)
        let received = try #require(server.requests(path: "/upload").first?.body)
        #expect(received.count == Int(request.value(forHTTPHeaderField: "Content-Length") ?? ""))
        #expect(received.count > contents.count)
        #expect(received.range(of: contents) != nil)
    }

    @Test func dataParametersAreTheirBytesAndAnEmptyNameStaysEmpty() throws {
        let url = try #require(URL(string: "https://api.example/upload"))
        let bytes = Data([0xFF, 0x00, 0x41])
        let request = try HTTPRequestSerializer().multipartFormRequest(
            method: "POST", url: url, parameters: ["blob": bytes, "": "x", "none": NSNull()]
        ) { _ in }
        let body = try #require(request.httpBody)
        func part(_ name: String, _ value: Data) -> Data {
            Data("Content-Disposition: form-data; name=\"\(name)\"\r\n\r\n".utf8) + value + Data("\r\n--".utf8)
        }
        // AFNetworking appends an NSData parameter as it is; before, the field was the text "3 bytes".
        #expect(body.range(of: part("blob", bytes)) != nil)
        // Before, the pair "=x" was split into a field named "x" with an empty value.
        #expect(body.range(of: part("", Data("x".utf8))) != nil)
        #expect(body.range(of: part("none", Data())) != nil)
        #expect(request.value(forHTTPHeaderField: "Content-Length") == "\(body.count)")
    }

    @Test func lineBreaksInAPartsHeadersCannotAddHeaders() throws {
        let url = try #require(URL(string: "https://api.example/upload"))
        let request = try HTTPRequestSerializer().multipartFormRequest(method: "POST", url: url, parameters: nil) {
            form in
            form.append(Data("a".utf8), name: "f", fileName: "f.txt", mimeType: "text/plain\r\nX-Injected: 1")
            form.append(
                headers: ["X-Note": "one\ntwo", "Content-Disposition": "form-data; name=\"g\""], body: Data("b".utf8))
        }
        let body = String(decoding: try #require(request.httpBody), as: UTF8.self)
        #expect(!body.contains("\r\nX-Injected"))
        #expect(body.contains("Content-Type: text/plain%0D%0AX-Injected: 1\r\n"))
        #expect(body.contains("X-Note: one%0Atwo\r\n"))
        #expect(request.value(forHTTPHeaderField: "Content-Length") == "\(body.utf8.count)")
    }

    /// A file that grows after it was appended (a log still being written): it went out cut at the length taken
    /// when it was appended, a request that succeeded with a part that was not the file.
    @Test func aFileThatGrewAfterItWasAppendedFailsWithoutATask() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("grown-\(UUID().uuidString).log")
        try Data("first line\n".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        try await withUploadServer { server, manager in
            let error = await post(manager) { form in
                try form.append(fileURL: file, name: "log")
                let handle = try FileHandle(forWritingTo: file)
                try handle.seekToEnd()
                try handle.write(contentsOf: Data("second line\n".utf8))
                try handle.close()
            }
            #expect(error != nil)
            #expect(server.requests.isEmpty)
        }
    }

    @Test func aStreamShorterThanDeclaredFailsWithoutATask() async throws {
        try await withUploadServer { server, manager in
            let error = await post(manager) { form in
                form.append(
                    InputStream(data: Data("short".utf8)), name: "s", fileName: "s", length: 100,
                    mimeType: "text/plain")
            }
            #expect(error != nil)
            #expect(server.requests.isEmpty)
        }
    }
}
