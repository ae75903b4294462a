import CourierMockServer
import CourierTestSupport
import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import Courier

/// Redirects whose `Location` is not http or https: as on Darwin, the delegate's `willPerformHTTPRedirection` is
/// asked about them (apps catch an OAuth callback such as `myapp://callback?code=…` there and answer `nil`), and
/// following one fails with `unsupportedURL` whose failing URL is the target. A server's `Location` never makes
/// Courier read a `file:` URL. Before, such a 3xx was delivered as the final response without asking the delegate.
@Suite("Redirects to other schemes")
struct RedirectSchemeTests {
    /// Answers every redirect with `follow ? the proposed request : nil`, and records the proposed URLs.
    final class RedirectAnswerer: NSObject, URLSessionTaskDelegate, Sendable {
        let follow: Bool
        let proposed = NIOLockedValueBox<[String]>([])

        init(follow: Bool) {
            self.follow = follow
        }

        func urlSession(
            _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
            newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
        ) {
            proposed.withLockedValue { $0.append(request.url?.absoluteString ?? "") }
            completionHandler(follow ? request : nil)
        }
    }

    private func redirect(_ server: MockServer, to location: String) {
        server.route("/login", response: MockResponse(status: 302, headers: [("Location", location)]))
    }

    @Test func aDelegateThatAnswersNilGetsTheRedirectResponse() async throws {
        try await withServer { server in
            redirect(server, to: "myapp://callback?code=abc")
            let delegate = RedirectAnswerer(follow: false)
            let session = makeSession(delegate: delegate)
            defer { session.invalidateAndCancel() }
            let outcome = await session.runDataTask(server.url("/login"))
            #expect(outcome.error == nil)
            #expect(outcome.http?.statusCode == 302)
            #expect(outcome.http?.value(forHTTPHeaderField: "Location") == "myapp://callback?code=abc")
            #expect(delegate.proposed.withLockedValue { $0 } == ["myapp://callback?code=abc"])
        }
    }

    @Test(arguments: [false, true])
    func followingACustomSchemeFailsWithUnsupportedURLAtTheTarget(withDelegate: Bool) async throws {
        try await withServer { server in
            redirect(server, to: "myapp://callback?code=abc")
            let delegate = RedirectAnswerer(follow: true)
            let session = makeSession(delegate: withDelegate ? delegate : nil)
            defer { session.invalidateAndCancel() }
            let outcome = await session.runDataTask(server.url("/login"))
            #expect(outcome.urlError?.code == .unsupportedURL)
            #expect(outcome.urlError?.failingURL?.absoluteString == "myapp://callback?code=abc")
            #expect(outcome.data == nil)
            #expect(server.requests.count == 1)
            #expect(delegate.proposed.withLockedValue { $0.count } == (withDelegate ? 1 : 0))
        }
    }

    /// A server's `Location: file:///…` never reads the file, followed by default or by the delegate.
    @Test(arguments: [false, true])
    func aRedirectToAFileURLNeverReadsTheFile(withDelegate: Bool) async throws {
        let folder = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let secret = folder.appendingPathComponent("secret.txt")
        try Data("local secret".utf8).write(to: secret)
        try await withServer { server in
            redirect(server, to: secret.absoluteString)
            let session = makeSession(delegate: withDelegate ? RedirectAnswerer(follow: true) : nil)
            defer { session.invalidateAndCancel() }
            let outcome = await session.runDataTask(server.url("/login"))
            #expect(outcome.urlError?.code == .unsupportedURL)
            #expect(outcome.data == nil)
            #expect(outcome.urlError?.failingURL == secret)
        }
    }

    /// The delegate may replace a custom-scheme target with an https one: that request is loaded.
    @Test func aDelegateMayReplaceTheTargetWithAnHTTPRequest() async throws {
        try await withServer { server in
            redirect(server, to: "myapp://callback?code=abc")
            server.route("/landing", response: .ok("landed"))
            final class Replacing: NSObject, URLSessionTaskDelegate, Sendable {
                let landing: URL
                init(landing: URL) { self.landing = landing }
                func urlSession(
                    _ session: URLSession, task: URLSessionTask,
                    willPerformHTTPRedirection response: HTTPURLResponse, newRequest request: URLRequest,
                    completionHandler: @escaping @Sendable (URLRequest?) -> Void
                ) {
                    completionHandler(URLRequest(url: landing))
                }
            }
            let session = makeSession(delegate: Replacing(landing: server.url("/landing")))
            defer { session.invalidateAndCancel() }
            let outcome = await session.runDataTask(server.url("/login"))
            #expect(outcome.error == nil)
            #expect(outcome.data == Data("landed".utf8))
        }
    }
}
