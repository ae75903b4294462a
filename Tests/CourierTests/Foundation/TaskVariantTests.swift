import Courier
import Foundation
import Testing

/// The task-taking variants of `URLCache`, `HTTPCookieStorage` and `URLCredentialStorage`.
@Suite("Task variants of the storages")
struct TaskVariantTests {
    private let space = URLProtectionSpace(
        host: "example.com", port: 443, protocol: NSURLProtectionSpaceHTTPS, realm: "api",
        authenticationMethod: NSURLAuthenticationMethodHTTPBasic)

    @Test func cacheUsesTheDataTasksCurrentRequest() async throws {
        let url = try #require(URL(string: "https://example.com/cached"))
        let session = URLSession(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        let task = session.dataTask(with: url)
        let cache = URLCache(memoryCapacity: 1 << 20, diskCapacity: 0)
        let response = URLResponse(url: url, mimeType: "text/plain", expectedContentLength: 5, textEncodingName: nil)
        let cached = CachedURLResponse(response: response, data: Data("hello".utf8))

        cache.storeCachedResponse(cached, for: task)
        #expect(cache.cachedResponse(for: URLRequest(url: url))?.data == Data("hello".utf8))
        let viaHandler = await withCheckedContinuation { continuation in
            cache.getCachedResponse(for: task) { continuation.resume(returning: $0?.data) }
        }
        #expect(viaHandler == Data("hello".utf8))
        #expect(await cache.cachedResponse(for: task)?.data == Data("hello".utf8))

        cache.removeCachedResponse(for: task)
        #expect(cache.cachedResponse(for: URLRequest(url: url)) == nil)
        let afterRemoval = await withCheckedContinuation { continuation in
            cache.getCachedResponse(for: task) { continuation.resume(returning: $0 == nil) }
        }
        #expect(afterRemoval)
    }

    @Test func cookieStorageUsesTheTasksCurrentRequest() async throws {
        let url = try #require(URL(string: "https://example.com/shop/cart"))
        let session = URLSession(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        let task = session.dataTask(with: url)
        let otherTask = session.dataTask(with: try #require(URL(string: "https://example.org/")))
        let storage = HTTPCookieStorage()
        let cookies = HTTPCookie.cookies(withResponseHeaderFields: ["Set-Cookie": "id=42; Path=/shop"], for: url)
        try #require(cookies.count == 1)

        storage.storeCookies(cookies, for: task)
        #expect(storage.cookies?.map(\.name) == ["id"])
        let names = await withCheckedContinuation { continuation in
            storage.getCookiesFor(task) { continuation.resume(returning: $0?.map(\.name)) }
        }
        #expect(names == ["id"])
        #expect(await storage.cookies(for: task)?.map(\.name) == ["id"])
        #expect(await storage.cookies(for: otherTask)?.isEmpty == true)
    }

    @Test func cookieStorageTaskVariantFollowsTheAcceptPolicy() throws {
        let url = try #require(URL(string: "https://example.com/"))
        let session = URLSession(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        let task = session.dataTask(with: url)
        let storage = HTTPCookieStorage()
        storage.cookieAcceptPolicy = .never
        storage.storeCookies(HTTPCookie.cookies(withResponseHeaderFields: ["Set-Cookie": "a=b"], for: url), for: task)
        #expect(storage.cookies?.isEmpty == true)
    }

    @Test func credentialStorageTaskVariants() async throws {
        let session = URLSession(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        let task = session.dataTask(with: try #require(URL(string: "https://example.com/")))
        let storage = URLCredentialStorage()
        let alice = URLCredential(user: "alice", password: "a", persistence: .forSession)
        let bob = URLCredential(user: "bob", password: "b", persistence: .forSession)

        storage.set(alice, for: space, task: task)
        storage.setDefaultCredential(bob, for: space, task: task)
        let users = await withCheckedContinuation { continuation in
            storage.getCredentials(for: space, task: task) { continuation.resume(returning: $0?.keys.sorted()) }
        }
        #expect(users == ["alice", "bob"])
        #expect(await storage.credentials(for: space, task: task)?.count == 2)
        let defaultUser = await withCheckedContinuation { continuation in
            storage.getDefaultCredential(for: space, task: task) { continuation.resume(returning: $0?.user) }
        }
        #expect(defaultUser == "bob")
        #expect(await storage.defaultCredential(for: space, task: task) == bob)

        storage.remove(bob, for: space, task: task)
        #expect(await storage.defaultCredential(for: space, task: task) == nil)
        storage.remove(alice, for: space, options: nil, task: task)
        #expect(await storage.credentials(for: space, task: task) == nil)
    }
}
