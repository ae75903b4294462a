import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import NIOConcurrencyHelpers
import Testing

/// `URLSession.reset` and `flush`: what they empty, and that later requests start on new connections.
@Suite("Session reset and flush")
struct ResetAndFlushTests {
    @Test func resetEmptiesTheStoragesAndLaterRequestsUseANewConnection() async throws {
        try await withServer { server in
            server.route(
                "/reset/page",
                response: MockResponse(
                    status: 200,
                    headers: [
                        ("Set-Cookie", "id=1; Path=/"), ("Cache-Control", "max-age=600"),
                    ], body: .data(Data("page".utf8))))
            let cache = URLCache(memoryCapacity: 1 << 20, diskCapacity: 0)
            let cookies = HTTPCookieStorage()
            let credentials = URLCredentialStorage()
            let space = URLProtectionSpace(
                host: "127.0.0.1", port: server.port, protocol: "http", realm: "r",
                authenticationMethod: NSURLAuthenticationMethodHTTPBasic)
            credentials.set(URLCredential(user: "u", password: "p", persistence: .forSession), for: space)
            let session = makeSession { configuration in
                configuration.urlCache = cache
                configuration.httpCookieStorage = cookies
                configuration.urlCredentialStorage = credentials
            }
            defer { session.finishTasksAndInvalidate() }

            let first = await session.runDataTask(server.url("/reset/page"))
            #expect(first.error == nil)
            #expect(cookies.cookies?.count == 1)
            #expect(cache.cachedResponse(for: URLRequest(url: server.url("/reset/page"))) != nil)

            await session.reset()
            #expect(cookies.cookies?.isEmpty == true)
            #expect(cache.cachedResponse(for: URLRequest(url: server.url("/reset/page"))) == nil)
            #expect(credentials.allCredentials.isEmpty)

            // Not from the cache (emptied), and on a new connection (the idle one was closed).
            let second = await session.runDataTask(server.url("/reset/page"))
            #expect(second.error == nil)
            let requests = server.requests(path: "/reset/page")
            try #require(requests.count == 2)
            #expect(requests[0].connectionID != requests[1].connectionID)
            #expect(requests[1].headers("Cookie").isEmpty)
        }
    }

    @Test func flushClosesIdleConnectionsAndKeepsTheStorages() async throws {
        try await withServer { server in
            server.route(
                "/flush/page",
                response: MockResponse(
                    status: 200,
                    headers: [
                        ("Set-Cookie", "id=1; Path=/")
                    ], body: .data(Data("page".utf8))))
            let cookies = HTTPCookieStorage()
            let session = makeSession { $0.httpCookieStorage = cookies }
            defer { session.finishTasksAndInvalidate() }

            _ = await session.runDataTask(server.url("/flush/page"))
            _ = await session.runDataTask(server.url("/flush/page"))
            await withCheckedContinuation { continuation in
                session.flush { continuation.resume() }
            }
            _ = await session.runDataTask(server.url("/flush/page"))

            let requests = server.requests(path: "/flush/page")
            try #require(requests.count == 3)
            #expect(requests[0].connectionID == requests[1].connectionID)
            #expect(requests[1].connectionID != requests[2].connectionID)
            #expect(requests[2].headers("Cookie") == ["id=1"])
            #expect(cookies.cookies?.count == 1)
        }
    }

    /// A reset while a connection is still being opened (its TLS handshake waits for the delegate's trust answer):
    /// the request it was opened for runs on it, but it is not kept for later requests, which start on a new
    /// connection as Darwin promises ("future requests occur on a new socket").
    @Test func aConnectionStillOpeningAtAResetIsNotReusedAfterIt() async throws {
        try await withServer(.https) { server in
            server.route("/opening", response: .ok("ok"))
            let delegate = HeldTrustDelegate()
            let session = makeSession(delegate: delegate)
            defer { session.finishTasksAndInvalidate() }
            async let first = session.runDataTask(server.url("/opening"))
            await delegate.asked.wait()
            await session.reset()
            delegate.release.open()
            #expect(await first.error == nil)
            #expect(await session.runDataTask(server.url("/opening")).error == nil)
            let requests = server.requests(path: "/opening")
            try #require(requests.count == 2)
            #expect(requests[0].connectionID != requests[1].connectionID)
        }
    }

    @Test func resetCallsItsHandlerOnTheDelegateQueue() async throws {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.name = "reset-queue"
        let session = URLSession(configuration: .ephemeral, delegate: nil, delegateQueue: queue)
        defer { session.finishTasksAndInvalidate() }
        let onQueue = await withCheckedContinuation { continuation in
            session.reset { continuation.resume(returning: OperationQueue.current === queue) }
        }
        #expect(onQueue)
    }
}

/// Trusts the server, but holds its first server-trust answer until ``release`` opens (``asked`` opens when the
/// challenge came): the connection stays in its TLS handshake meanwhile. Later challenges are answered at once.
private final class HeldTrustDelegate: NSObject, URLSessionDelegate, @unchecked Sendable {
    let asked = AsyncGate()
    let release = AsyncGate()
    private let challenges = NIOLockedValueBox(0)

    func urlSession(
        _ session: URLSession, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        guard let trust = challenge.protectionSpace.serverTrust else {
            return completionHandler(.performDefaultHandling, nil)
        }
        let credential = URLCredential(trust: trust)
        let isFirst = challenges.withLockedValue { count in
            count += 1
            return count == 1
        }
        guard isFirst else { return completionHandler(.useCredential, credential) }
        asked.open()
        let release = self.release
        Task {
            await release.wait()
            completionHandler(.useCredential, credential)
        }
    }
}
