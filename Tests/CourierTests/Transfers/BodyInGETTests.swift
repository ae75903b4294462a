import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

@testable import Courier

/// Darwin's HTTP loader fails a `GET` that carries a body with `URLError.dataLengthExceedsMaximum` (since iOS 13
/// and macOS 10.15), before anything is sent; FoundationNetworking does the same, and its own test suite
/// (`TestURLSession.test_dataTaskWithHttpInputStream`) asserts it. An empty body (no bytes, an empty file) is no
/// body, other methods keep theirs, and a custom `URLProtocol` still gets the request: the rule is the HTTP
/// transport's.
@Suite("A GET with a body")
struct BodyInGETTests {
    private func getRequest(_ url: URL) -> URLRequest {
        var request = URLRequest(url: url)
        request.httpMethod = "GET"
        return request
    }

    @Test func dataAndStreamBodiesFailBeforeAnythingIsSent() async throws {
        try await withServer { server in
            server.route("/get", response: .ok("sent"))
            let delegate = RecordingDelegate()
            let session = makeSession(delegate: delegate)
            defer { session.invalidateAndCancel() }
            var withData = getRequest(server.url("/get"))
            withData.httpBody = Data("{\"q\":1}".utf8)
            var withStream = getRequest(server.url("/get"))
            withStream.httpBodyStream = InputStream(data: Data("streamed".utf8))
            for request in [withData, withStream] {
                let outcome = await session.runDataTask(request)
                #expect(outcome.urlError?.code == .dataLengthExceedsMaximum)
                #expect(outcome.urlError?.failingURL == server.url("/get"))
                #expect(outcome.response == nil)
            }
            let eventsBefore = delegate.events.count
            let task = session.dataTask(with: withData)
            task.resume()
            await delegate.waitForCompletions(1)
            #expect((task.error as? URLError)?.code == .dataLengthExceedsMaximum)
            // Only the creation and the completion: nothing was sent and no response came.
            #expect(
                Array(delegate.events.dropFirst(eventsBefore))
                    == [.created(task.taskIdentifier), .complete(.dataLengthExceedsMaximum)])
            #expect(task.countOfBytesSent == 0)
            await #expect(throws: URLError.self) { _ = try await session.data(for: withData) }
            #expect(server.requests(path: "/get").isEmpty)
        }
    }

    @Test func uploadTasksWithAGETFailToo() async throws {
        try await withServer { server in
            server.route("/get", response: .ok("sent"))
            let session = makeSession()
            defer { session.invalidateAndCancel() }
            let request = getRequest(server.url("/get"))
            let fromData = await #expect(throws: URLError.self) {
                _ = try await session.upload(for: request, from: Data("uploaded".utf8))
            }
            #expect(fromData?.code == .dataLengthExceedsMaximum)
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("courier-get-\(UUID()).txt")
            try Data("from a file".utf8).write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            let fromFile = await #expect(throws: URLError.self) {
                _ = try await session.upload(for: request, fromFile: file)
            }
            #expect(fromFile?.code == .dataLengthExceedsMaximum)
            #expect(server.requests(path: "/get").isEmpty)
        }
    }

    @Test func anEmptyBodyAndOtherMethodsAreSent() async throws {
        try await withServer { server in
            server.route("/get", response: .ok("sent"))
            let session = makeSession()
            defer { session.invalidateAndCancel() }
            var empty = getRequest(server.url("/get"))
            empty.httpBody = Data()
            let (emptyData, _) = try await session.data(for: empty)
            #expect(emptyData == Data("sent".utf8))
            let (emptyUpload, _) = try await session.upload(for: getRequest(server.url("/get")), from: Data())
            #expect(emptyUpload == Data("sent".utf8))
            let emptyFile = FileManager.default.temporaryDirectory.appendingPathComponent("courier-empty-\(UUID())")
            try Data().write(to: emptyFile)
            defer { try? FileManager.default.removeItem(at: emptyFile) }
            let (emptyFileUpload, _) = try await session.upload(
                for: getRequest(server.url("/get")), fromFile: emptyFile)
            #expect(emptyFileUpload == Data("sent".utf8))
            for method in ["POST", "PUT", "DELETE", "PATCH"] {
                var request = URLRequest(url: server.url("/get"))
                request.httpMethod = method
                request.httpBody = Data("body".utf8)
                let (data, _) = try await session.data(for: request)
                #expect(data == Data("sent".utf8), "\(method)")
            }
            #expect(server.requests(path: "/get").count == 7)
        }
    }

    @Test func aCustomProtocolStillGetsTheRequest() async throws {
        StubProtocol.script("/get-body", .echoHTTPBody)
        let session = makeSession { $0.protocolClasses = [StubProtocol.self] }
        defer { session.invalidateAndCancel() }
        var request = getRequest(try #require(URL(string: "https://stub.test/get-body")))
        request.httpBody = Data("to the protocol".utf8)
        #expect(try await session.data(for: request).0 == Data("to the protocol".utf8))
    }
}
