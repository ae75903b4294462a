import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
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
