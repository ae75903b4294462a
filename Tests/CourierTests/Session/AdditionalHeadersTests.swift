import CourierMockServer
import CourierTestSupport
import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import Courier

/// Answers requests to `headers.test` with the header fields its `request` carries, one `name: value` line each, in
/// order: what a custom protocol is given.
private final class HeaderEchoProtocol: URLProtocol, @unchecked Sendable {
    override class func canInit(with request: URLRequest) -> Bool {
        request.url?.host == "headers.test"
    }

    override class func canonicalRequest(for request: URLRequest) -> URLRequest {
        request
    }

    override func startLoading() {
        guard let client, let url = request.url else { return }
        let lines = request.headerFields.pairs.map { "\($0.0): \($0.1)\n" }.joined()
        let response = HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: [:])!
        client.urlProtocol(self, didReceive: response, cacheStoragePolicy: .notAllowed)
        client.urlProtocol(self, didLoad: Data(lines.utf8))
        client.urlProtocolDidFinishLoading(self)
    }

    override func stopLoading() {}
}

/// `httpAdditionalHeaders` as Darwin applies them: to a task's request when the task is made, so that
/// `currentRequest` and a custom protocol's request carry them (swift-corelibs-foundation skips the test of this in
/// kean/Get and Alamofire's protocol test relies on it); `originalRequest` stays the app's.
@Suite("Session additional headers")
struct AdditionalHeadersTests {
    private func sessionWithHeaders(protocols: [AnyClass] = []) -> URLSession {
        makeSession {
            $0.httpAdditionalHeaders = [
                "X-Session": "1", "X-Both": "session", "Authorization": "Bearer session",
                "Proxy-Authorization": "Basic not-for-the-origin",
            ]
            $0.protocolClasses = protocols
        }
    }

    @Test func theCurrentRequestCarriesThemFromTheTasksCreationAndTheOriginalDoesNot() async throws {
        try await withServer { server in
            server.route("/h", response: .ok("ok"))
            let session = sessionWithHeaders()
            defer { session.invalidateAndCancel() }
            var request = URLRequest(url: server.url("/h"))
            request.setValue("app", forHTTPHeaderField: "X-Both")
            let made = NIOLockedValueBox<URLSessionDataTask?>(nil)
            let outcome = await session.runDataTask(request) { task in
                made.withLockedValue { $0 = task }
                let current = task.currentRequest
                #expect(current?.value(forHTTPHeaderField: "X-Session") == "1")
                // The request's own value wins; a reserved name is never added, `Authorization` is (as on Darwin).
                #expect(current?.value(forHTTPHeaderField: "X-Both") == "app")
                #expect(current?.value(forHTTPHeaderField: "Authorization") == "Bearer session")
                #expect(current?.value(forHTTPHeaderField: "Proxy-Authorization") == nil)
                #expect(task.originalRequest?.value(forHTTPHeaderField: "X-Session") == nil)
                #expect(task.originalRequest == request)
            }
            let task = try #require(made.withLockedValue { $0 })
            #expect(outcome.error == nil)
            #expect(task.currentRequest?.value(forHTTPHeaderField: "X-Session") == "1")
            #expect(task.originalRequest?.value(forHTTPHeaderField: "X-Session") == nil)
            let sent = try #require(server.requests.first)
            #expect(sent.headers.first { $0.name == "X-Session" }?.value == "1")
            #expect(sent.headers.first { $0.name == "X-Both" }?.value == "app")
            #expect(sent.header("Authorization") == "Bearer session")
            #expect(sent.header("Proxy-Authorization") == nil)
        }
    }

    @Test func aCustomProtocolIsGivenThem() async throws {
        let session = sessionWithHeaders(protocols: [HeaderEchoProtocol.self])
        defer { session.invalidateAndCancel() }
        var request = URLRequest(url: URL(string: "https://headers.test/")!)
        request.setValue("app", forHTTPHeaderField: "X-Both")
        let (data, _) = try await session.data(for: request)
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(lines.contains("X-Session: 1"))
        #expect(lines.contains("X-Both: app"))
        #expect(lines.contains("Authorization: Bearer session"))
        #expect(!lines.contains { $0.lowercased().hasPrefix("proxy-authorization") })
    }

    /// Merging them went through a dictionary, which sorted the request's own fields by name.
    @Test func theRequestsOwnFieldsKeepTheirOrderOnTheWire() async throws {
        try await withServer { server in
            server.route("/h", response: .ok("ok"))
            let session = sessionWithHeaders()
            defer { session.invalidateAndCancel() }
            var request = URLRequest(url: server.url("/h"))
            let names = ["X-Zulu", "X-Mike", "X-Alpha", "X-Yankee"]
            for name in names { request.setValue("v", forHTTPHeaderField: name) }
            _ = await session.runDataTask(request)
            let sent = try #require(server.requests.first)
            let order = sent.headers.map(\.name).filter { names.contains($0) }
            #expect(order == names)
            let sessionField = try #require(sent.headers.firstIndex { $0.name == "X-Session" })
            let lastOwn = try #require(sent.headers.firstIndex { $0.name == "X-Yankee" })
            #expect(lastOwn < sessionField)
        }
    }

    /// Merged without `setValue`'s check, as the request's own `allHTTPHeaderFields` are: a line break in a value
    /// must still never reach the wire as a header of its own.
    @Test func aValueWithALineBreakIsNeverSent() async throws {
        try await withServer { server in
            server.route("/h", response: .ok("ok"))
            let session = makeSession { $0.httpAdditionalHeaders = ["X-Evil": "a\r\nInjected: yes"] }
            defer { session.invalidateAndCancel() }
            let outcome = await session.runDataTask(URLRequest(url: server.url("/h")))
            #expect(outcome.error != nil)
            #expect(server.requests.isEmpty)
        }
    }

    /// A session's `Authorization` (Alamofire's `configuration.headers["Authorization"] = "Bearer …"`) is sent, as on
    /// Darwin; it follows a redirect on the same origin and never one to another origin (the redirect removes it,
    /// and the session's headers do not bring it back).
    @Test func aSessionsAuthorizationIsSentAndStaysOnItsOrigin() async throws {
        try await withServer { other in
            other.route("/landing", response: .ok("other"))
            try await withServer { server in
                server.route("/start", response: MockResponse(status: 302, headers: [("Location", "/same")]))
                server.route(
                    "/same",
                    response: MockResponse(status: 302, headers: [("Location", other.url("/landing").absoluteString)]))
                let session = makeSession {
                    $0.httpAdditionalHeaders = ["Authorization": "Bearer 123456", "X-Session": "1"]
                }
                defer { session.invalidateAndCancel() }
                let outcome = await session.runDataTask(URLRequest(url: server.url("/start")))
                #expect(outcome.data == Data("other".utf8))
                #expect(server.requests(path: "/start").first?.header("Authorization") == "Bearer 123456")
                #expect(server.requests(path: "/same").first?.header("Authorization") == "Bearer 123456")
                let landing = try #require(other.requests(path: "/landing").first)
                #expect(landing.header("Authorization") == nil)
                #expect(landing.header("X-Session") == "1")
            }
        }
    }
}
