import CourierMockServer
import CourierTestSupport
import Foundation
import NIOConcurrencyHelpers
import NIOPosix
import Testing

@testable import Courier

/// Counts the notifications named `name` whose object is `object` (other tests' stores post too).
private final class NotificationCounter {
    private let count = NIOLockedValueBox(0)
    private var token: (any NSObjectProtocol)?

    init(_ name: Notification.Name, object: AnyObject) {
        let observer = NotificationCenter.default.addObserver(forName: name, object: object, queue: nil) {
            [count] _ in
            count.withLockedValue { $0 += 1 }
        }
        token = observer
    }

    var value: Int { count.withLockedValue { $0 } }

    func stop() {
        if let token { NotificationCenter.default.removeObserver(token) }
    }
}

@Suite("Store change notifications")
struct StoreNotificationTests {
    private func cookie(_ name: String, value: String = "v") throws -> HTTPCookie {
        try #require(
            HTTPCookie(properties: [.name: name, .value: value, .domain: "example.com", .path: "/"]))
    }

    @Test("Cookie storage posts on each change and not when nothing changed")
    func cookies() throws {
        let storage = HTTPCookieStorage()
        let counter = NotificationCounter(.NSHTTPCookieManagerCookiesChanged, object: storage)
        defer { counter.stop() }
        storage.setCookie(try cookie("a"))
        #expect(counter.value == 1)
        storage.setCookie(try cookie("a"))  // identical
        #expect(counter.value == 1)
        storage.setCookie(try cookie("a", value: "w"))  // replaced
        #expect(counter.value == 2)
        storage.deleteCookie(try cookie("absent"))
        #expect(counter.value == 2)
        storage.deleteCookie(try cookie("a"))
        #expect(counter.value == 3)
        storage.removeCookies(since: .distantPast)  // already empty
        #expect(counter.value == 3)
        storage.cookieAcceptPolicy = .never
        storage.setCookie(try cookie("b"))
        #expect(counter.value == 3)
        #expect(
            NSNotification.Name.NSHTTPCookieManagerCookiesChanged.rawValue
                == "NSHTTPCookieManagerCookiesChangedNotification")
    }

    @Test("Credential storage posts on each change and not when nothing changed")
    func credentials() {
        let storage = URLCredentialStorage()
        let counter = NotificationCounter(.NSURLCredentialStorageChanged, object: storage)
        defer { counter.stop() }
        let space = URLProtectionSpace(
            host: "example.com", port: 443, protocol: NSURLProtectionSpaceHTTPS, realm: nil,
            authenticationMethod: NSURLAuthenticationMethodHTTPBasic)
        let credential = URLCredential(user: "ann", password: "p", persistence: .forSession)
        storage.set(credential, for: space)
        #expect(counter.value == 1)
        storage.set(URLCredential(user: "ann", password: "p", persistence: .forSession), for: space)
        #expect(counter.value == 1)
        // The first credential stored became the default: making it the default again changes nothing.
        storage.setDefaultCredential(credential, for: space)
        #expect(counter.value == 1)
        let other = URLCredential(user: "bob", password: "q", persistence: .forSession)
        storage.set(other, for: space)
        #expect(counter.value == 2)
        storage.setDefaultCredential(other, for: space)
        #expect(counter.value == 3)
        storage.setDefaultCredential(other, for: space)
        #expect(counter.value == 3)
        storage.remove(URLCredential(user: "carol", password: "x", persistence: .forSession), for: space)
        #expect(counter.value == 3)
        storage.remove(credential, for: space)
        #expect(counter.value == 4)
        storage.remove(other, for: space)
        #expect(counter.value == 5)
        #expect(storage.credentials(for: space) == nil)
    }

    @Test("A synchronizable credential is removed only with the RemoveSynchronizable option")
    func synchronizable() {
        let storage = URLCredentialStorage()
        let space = URLProtectionSpace(
            host: "example.org", port: 443, protocol: NSURLProtectionSpaceHTTPS, realm: nil,
            authenticationMethod: NSURLAuthenticationMethodHTTPBasic)
        let credential = URLCredential(user: "ann", password: "p", persistence: .synchronizable)
        storage.set(credential, for: space)
        storage.remove(credential, for: space)
        #expect(storage.credentials(for: space)?["ann"] != nil)
        storage.remove(credential, for: space, options: [NSURLCredentialStorageRemoveSynchronizableCredentials: true])
        #expect(storage.credentials(for: space) == nil)
    }

    @Test("sortedCookies(using:) orders by key-path descriptors; description counts cookies")
    func sortedCookies() throws {
        let storage = HTTPCookieStorage()
        for (name, value) in [("b", "2"), ("a", "2"), ("c", "1")] {
            storage.setCookie(try cookie(name, value: value))
        }
        let byName = storage.sortedCookies(using: [NSSortDescriptor(keyPath: \HTTPCookie.name, ascending: true)])
        #expect(byName.map(\.name) == ["a", "b", "c"])
        let byValueThenNameDescending = storage.sortedCookies(using: [
            NSSortDescriptor(keyPath: \HTTPCookie.value, ascending: true),
            NSSortDescriptor(keyPath: \HTTPCookie.name, ascending: false),
        ])
        #expect(byValueThenNameDescending.map(\.name) == ["c", "b", "a"])
        #expect(storage.sortedCookies(using: []).map(\.name) == ["b", "a", "c"])
        #expect(storage.description.hasSuffix("{ 3 cookies }"))
    }

    /// Observers are app code: a cookie a response set is announced off Courier's network threads.
    @Test func cookiesAResponseSetAreAnnouncedOffTheEventLoops() async throws {
        try await withServer { server in
            server.route("/set", response: MockResponse(headers: [("Set-Cookie", "a=1")]))
            let storage = HTTPCookieStorage()
            let onEventLoop = NIOLockedValueBox<[Bool]>([])
            let token = NotificationCenter.default.addObserver(
                forName: .NSHTTPCookieManagerCookiesChanged, object: storage, queue: nil
            ) { _ in
                onEventLoop.withLockedValue { $0.append(MultiThreadedEventLoopGroup.currentEventLoop != nil) }
            }
            defer { NotificationCenter.default.removeObserver(token) }
            let session = makeSession { $0.httpCookieStorage = storage }
            defer { session.invalidateAndCancel() }
            _ = await session.runDataTask(server.url("/set"))
            for _ in 0..<100 where onEventLoop.withLockedValue({ $0.isEmpty }) {
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(onEventLoop.withLockedValue { $0 } == [false])
        }
    }

    /// The import of FoundationNetworking's cookie file runs while `shared` is being created: it announces nothing.
    @Test func importingTheFoundationCookieFilePostsNothing() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("courier-import-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent(".cookies.shared")
        let cookies: [String: [String: Any]] = [
            "a": ["Name": "a", "Value": "1", "Domain": "example.com", "Path": "/", "Expires": 4_000_000_000.0]
        ]
        try PropertyListSerialization.data(fromPropertyList: cookies, format: .xml, options: 0).write(to: file)
        let storage = HTTPCookieStorage()
        let counter = NotificationCounter(.NSHTTPCookieManagerCookiesChanged, object: storage)
        defer { counter.stop() }
        storage.importFoundationCookies(fromFileAt: file.path)
        #expect(storage.cookies?.map(\.name) == ["a"])
        #expect(counter.value == 0)
    }
}
