import Courier
import Foundation
import Testing

/// swift-corelibs-foundation's `TestHTTPCookieStorage`, ported. Each test uses its own storages (a fresh one and a
/// fresh group container) instead of emptying `HTTPCookieStorage.shared`, so that tests can run in parallel.
@Suite("HTTPCookieStorage compatibility")
struct HTTPCookieStorageCompatibilityTests {
    /// Runs `body` on a fresh in-memory storage and on a fresh group container's, then removes the group's jar from
    /// the user's data folder (each run left one there, with its SQLite files, for every test).
    private static func withStorages(_ body: (HTTPCookieStorage) throws -> Void) throws {
        let group = HTTPCookieStorage.sharedCookieStorage(forGroupContainerIdentifier: UUID().uuidString)
        defer {
            group.flushToDisk()
            if let folder = group.persistentFolder { try? FileManager.default.removeItem(at: folder) }
        }
        for storage in [HTTPCookieStorage(), group] { try body(storage) }
    }

    private func cookie(
        _ name: String, value: String = "Test @#$%^$&*99", domain: String, path: String = "/", expires: Date? = nil
    ) throws -> HTTPCookie {
        var properties: [HTTPCookiePropertyKey: Any] = [.name: name, .value: value, .path: path, .domain: domain]
        properties[.expires] = expires
        return try #require(HTTPCookie(properties: properties))
    }

    @Test("Basic storage and retrieval: expired cookies are not stored, same identity replaces")
    func basicStorageAndRetrieval() throws {
        try Self.withStorages { storage in
            storage.setCookie(try cookie("TestCookie1", domain: "swift.org", expires: Date(timeIntervalSince1970: 1e9)))
            #expect(storage.cookies?.count == 0)
            storage.setCookie(try cookie("TestCookie1", domain: "swift.org"))
            #expect(storage.cookies?.count == 1)
            storage.setCookie(try cookie("TestCookie1", value: "other", domain: "swift.org"))
            #expect(storage.cookies?.map(\.value) == ["other"])
            storage.setCookie(try cookie("TestCookie1", domain: "example.com"))
            #expect(storage.cookies?.count == 2)
        }
    }

    @Test("Delete a cookie")
    func deleteCookie() throws {
        try Self.withStorages { storage in
            let first = try cookie("TestCookie1", domain: "swift.org", expires: Date(timeIntervalSinceNow: 1000))
            let second = try cookie("TestCookie1", domain: "example.com")
            storage.setCookie(first)
            storage.setCookie(second)
            #expect(storage.cookies?.count == 2)
            storage.deleteCookie(first)
            #expect(storage.cookies?.count == 1)
            storage.deleteCookie(second)
            #expect(storage.cookies?.count == 0)
        }
    }

    @Test("Remove the cookies stored since a date")
    func removeCookies() throws {
        try Self.withStorages { storage in
            storage.setCookie(try cookie("TestCookie1", domain: "swift.org", expires: Date(timeIntervalSinceNow: 1000)))
            storage.removeCookies(since: Date(timeIntervalSinceNow: 120))
            #expect(storage.cookies?.count == 1)
            storage.removeCookies(since: Date(timeIntervalSinceNow: -120))
            #expect(storage.cookies?.count == 0)
        }
    }

    @Test("setCookies(_:for:mainDocumentURL:) keeps only the URL's cookies")
    func cookiesForURL() throws {
        let url = try #require(URL(string: "https://swift.org"))
        try Self.withStorages { storage in
            let foreign = try cookie("TestCookie1", domain: "example.com")
            let own = try cookie("TestCookie1", domain: "swift.org", expires: Date(timeIntervalSinceNow: 1000))
            storage.setCookies([foreign, own], for: url, mainDocumentURL: nil)
            #expect(storage.cookies?.count == 1)
            #expect(storage.cookies(for: url)?.count == 1)
        }
    }

    @Test("Only cookies from the main document's domain")
    func mainDocumentURL() throws {
        let mainURL = try #require(URL(string: "http://ci.swift.org"))
        try Self.withStorages { storage in
            storage.cookieAcceptPolicy = .onlyFromMainDocumentDomain
            let url = try #require(URL(string: "https://swift.org/downloads"))
            storage.setCookies([try cookie("TestCookie2", domain: "swift.org")], for: url, mainDocumentURL: mainURL)
            #expect(storage.cookies(for: url)?.count == 1)
            let other = try #require(URL(string: "https://dt.swift.org/downloads"))
            storage.setCookies([try cookie("TestCookie3", domain: "swift.org")], for: other, mainDocumentURL: mainURL)
            #expect(storage.cookies(for: other)?.count == 0)
        }
    }

    @Test("Domain matching ignores case; a leading dot covers subdomains")
    func domainMatching() throws {
        try Self.withStorages { storage in
            let exact = try cookie("TestCookie1", value: "TestValue1", domain: "swift.org")
            let subdomains = try cookie("TestCookie2", value: "TestValue2", domain: ".SWIFT.org")
            let bugs = try cookie("TestCookie3", value: "TestValue3", domain: "bugs.swift.org")
            for cookie in [exact, subdomains, bugs] {
                storage.setCookie(cookie)
            }
            #expect(storage.cookies?.count == 3)
            let names = { (url: String) in Set(storage.cookies(for: URL(string: url)!)?.map(\.name) ?? []) }
            #expect(names("https://swift.ORG") == ["TestCookie1", "TestCookie2"])
            #expect(names("https://CI.swift.ORG") == ["TestCookie2"])
            #expect(names("https://BUGS.swift.org") == ["TestCookie2", "TestCookie3"])
            #expect(names("http://www.example.com").isEmpty)
            #expect(names("https://superswift.org").isEmpty)
        }
    }

    @Test("The shared storage is one object from every thread")
    func sharedFromManyThreads() async {
        let storages = await withTaskGroup(of: ObjectIdentifier.self) { group in
            for _ in 0..<32 {
                group.addTask { ObjectIdentifier(HTTPCookieStorage.shared) }
            }
            return await group.reduce(into: Set<ObjectIdentifier>()) { $0.insert($1) }
        }
        #expect(storages == [ObjectIdentifier(HTTPCookieStorage.shared)])
    }
}
