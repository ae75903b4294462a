import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

@testable import Courier

/// A `POST` whose own body goes without a `Content-Type` is sent with `application/x-www-form-urlencoded`, as
/// Darwin's loader and FoundationNetworking send it (swift-corelibs-foundation's
/// `TestURLSession.test_requestWithNonEmptyBody` checks it), also an upload task's (as Darwin sends it); the app's
/// own type wins, and other methods and an empty body get none.
@Suite("The form Content-Type of a POST body")
struct FormContentTypeTests {
    @Test func onlyAPOSTBodyWithoutATypeGetsTheFormType() async throws {
        try await withServer { server in
            server.route("/f", response: .ok("ok"))
            let session = makeSession()
            defer { session.invalidateAndCancel() }
            func sentType(_ method: String, _ configure: (inout URLRequest) -> Void) async throws -> String? {
                var request = URLRequest(url: server.url("/f"))
                request.httpMethod = method
                configure(&request)
                let outcome = await session.runDataTask(request)
                try #require(outcome.error == nil, "\(String(describing: outcome.error))")
                return try #require(server.requests(path: "/f").last).header("Content-Type")
            }
            let body = Data("a=1&b=2".utf8)
            #expect(try await sentType("POST") { $0.httpBody = body } == "application/x-www-form-urlencoded")
            #expect(
                try await sentType("POST") { $0.httpBodyStream = InputStream(data: body) }
                    == "application/x-www-form-urlencoded")
            #expect(
                try await sentType("POST") {
                    $0.httpBody = Data("{}".utf8)
                    $0.setValue("application/json", forHTTPHeaderField: "content-type")
                } == "application/json")
            #expect(try await sentType("POST") { $0.httpBody = Data() } == nil)
            #expect(try await sentType("PUT") { $0.httpBody = body } == nil)
            #expect(try await sentType("PATCH") { $0.httpBody = body } == nil)

            // An upload task's own body too, as on Darwin (FoundationNetworking leaves uploads without).
            var upload = URLRequest(url: server.url("/f"))
            upload.httpMethod = "POST"
            _ = try await session.upload(for: upload, from: body)
            #expect(
                try #require(server.requests(path: "/f").last).header("Content-Type")
                    == "application/x-www-form-urlencoded")
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("courier-form-\(UUID())")
            try body.write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            _ = try await session.upload(for: upload, fromFile: file)
            #expect(
                try #require(server.requests(path: "/f").last).header("Content-Type")
                    == "application/x-www-form-urlencoded")
            // An empty file is no body, as an empty `httpBody` is not.
            let emptyFile = FileManager.default.temporaryDirectory.appendingPathComponent("courier-form-\(UUID())")
            try Data().write(to: emptyFile)
            defer { try? FileManager.default.removeItem(at: emptyFile) }
            _ = try await session.upload(for: upload, fromFile: emptyFile)
            #expect(try #require(server.requests(path: "/f").last).header("Content-Type") == nil)
            upload.httpMethod = "PUT"
            _ = try await session.upload(for: upload, from: body)
            #expect(try #require(server.requests(path: "/f").last).header("Content-Type") == nil)

            // A streamed upload's body too.
            upload.httpMethod = "POST"
            let streaming = StreamProvidingDelegate(body: body)
            let streamingSession = makeSession(delegate: streaming)
            defer { streamingSession.invalidateAndCancel() }
            streamingSession.uploadTask(withStreamedRequest: upload).resume()
            await streaming.recorder.waitForCompletions()
            #expect(
                try #require(server.requests(path: "/f").last).header("Content-Type")
                    == "application/x-www-form-urlencoded")
        }
    }

    /// The rule is the HTTP loader's: a custom `URLProtocol` is given the request as the app made it.
    @Test func aCustomProtocolIsGivenTheRequestWithoutIt() async throws {
        StubProtocol.script("/form-type", .echoHeader("Content-Type"))
        let session = makeSession { $0.protocolClasses = [StubProtocol.self] }
        defer { session.invalidateAndCancel() }
        var request = URLRequest(url: try #require(URL(string: "https://stub.test/form-type")))
        request.httpMethod = "POST"
        request.httpBody = Data("a=1".utf8)
        let (echoed, _) = try await session.data(for: request)
        #expect(echoed == Data("none".utf8))
    }
}
