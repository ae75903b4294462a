import CourierStore
import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import Courier

/// The persistent cookie jar, the storage's limits and its domain index.
@Suite("Cookie jar")
struct CookieJarTests {
    private func folder() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("courier-jar-\(UUID().uuidString)")
    }

    static func cookie(
        _ name: String, domain: String = "example.test", path: String = "/",
        expires: Date? = Date(timeIntervalSinceNow: 3600),
        secure: Bool = false
    ) -> HTTPCookie {
        var properties: [HTTPCookiePropertyKey: Any] = [.name: name, .value: "v-\(name)", .domain: domain, .path: path]
        if let expires { properties[.expires] = expires }
        if secure { properties[.secure] = "TRUE" }
        return HTTPCookie(properties: properties)!
    }

    @Test func persistentCookiesComeBackAndSessionCookiesDoNot() throws {
        let directory = folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let storage = HTTPCookieStorage(persistentIn: directory)
            storage.setCookie(Self.cookie("kept", secure: true))
            storage.setCookie(Self.cookie("session", expires: nil))
            storage.setCookie(Self.cookie("deleted"))
            storage.setCookie(Self.cookie("later", domain: ".sub.example.test", path: "/a"))
            storage.deleteCookie(Self.cookie("deleted"))
            storage.flushToDisk()
            #expect(storage.cookies?.count == 3)
        }
        let reopened = HTTPCookieStorage(persistentIn: directory)
        let names = reopened.cookies?.map(\.name)
        #expect(names == ["kept", "later"])
        let kept = try #require(reopened.cookies?.first)
        #expect(kept.isSecure && kept.value == "v-kept" && kept.domain == "example.test")
        #expect(reopened.cookies?.last?.domain == ".sub.example.test" && reopened.cookies?.last?.path == "/a")
        #expect(!reopened.startsFresh)
        let mode =
            try FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent("Cookies.db").path)[
                .posixPermissions] as? Int
        #expect(mode == 0o600)
        // A session cookie that replaces a persistent one removes it from the jar.
        reopened.setCookie(Self.cookie("kept", expires: nil))
        reopened.flushToDisk()
        #expect(HTTPCookieStorage(persistentIn: directory).cookies?.map(\.name) == ["later"])
    }

    /// A jar that does not exist is created by the first persistent cookie, not by making the storage, nor by a
    /// session cookie or a deletion: a process that never keeps a cookie loads no SQLite and leaves no file.
    @Test func theJarIsCreatedByTheFirstPersistentCookie() throws {
        let directory = folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let jar = directory.appendingPathComponent("Cookies.db")
        let storage = HTTPCookieStorage(persistentIn: directory)
        #expect(storage.startsFresh)
        storage.setCookie(Self.cookie("session", expires: nil))
        storage.deleteCookie(Self.cookie("session", expires: nil))
        storage.deleteCookie(Self.cookie("never stored"))
        storage.flushToDisk()
        #expect(!FileManager.default.fileExists(atPath: jar.path))
        #expect(HTTPCookieStorage(persistentIn: directory).startsFresh)

        storage.setCookie(Self.cookie("kept"))
        storage.flushToDisk()
        #expect(FileManager.default.fileExists(atPath: jar.path))
        let reopened = HTTPCookieStorage(persistentIn: directory)
        #expect(!reopened.startsFresh)
        #expect(reopened.cookies?.map(\.name) == ["kept"])
    }

    @Test func aDeletionReachesAJarAnotherProcessCreatedMeanwhile() throws {
        let directory = folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        // Both start before the jar exists; the other one creates it with a persistent "x".
        let here = HTTPCookieStorage(persistentIn: directory)
        let other = HTTPCookieStorage(persistentIn: directory)
        other.setCookie(Self.cookie("x"))
        other.flushToDisk()
        // Here "x" becomes a session cookie, which deletes its persistent row.
        here.setCookie(Self.cookie("x", expires: nil))
        here.flushToDisk()
        #expect(HTTPCookieStorage(persistentIn: directory).cookies?.map(\.name) == [])
    }

    @Test func aCorruptJarIsMovedAsideAndTheStorageWorks() throws {
        let directory = folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(
            at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try Data(repeating: 0x41, count: 4096).write(to: directory.appendingPathComponent("Cookies.db"))
        let storage = HTTPCookieStorage(persistentIn: directory)
        storage.setCookie(Self.cookie("fresh"))
        storage.flushToDisk()
        #expect(HTTPCookieStorage(persistentIn: directory).cookies?.map(\.name) == ["fresh"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).contains { $0.contains("corrupt") })
    }

    @Test func aDomainKeepsAtMost180CookiesAndTheStorage10000TheOldestGoing() {
        let storage = HTTPCookieStorage()
        for index in 0...HTTPCookieStorage.maximumCookiesPerDomain {
            storage.setCookie(Self.cookie("c\(index)", domain: "one.test"))
        }
        let names = Set(storage.cookies?.map(\.name) ?? [])
        #expect(names.count == HTTPCookieStorage.maximumCookiesPerDomain)
        #expect(!names.contains("c0") && names.contains("c180"))

        let big = HTTPCookieStorage()
        for index in 0...HTTPCookieStorage.maximumCookies {
            big.setCookie(Self.cookie("n", domain: "d\(index).test"))
        }
        #expect(big.cookies?.count == HTTPCookieStorage.maximumCookies)
        #expect(big.cookies(for: URL(string: "http://d0.test/")!)?.isEmpty == true)
        #expect(big.cookies(for: URL(string: "http://d10000.test/")!)?.count == 1)
    }

    /// The per-site limit counts a registrable domain with all its subdomains, as browsers do: one server setting
    /// cookies on many subdomains of its own (free with wildcard DNS) keeps at most 180, and cannot fill the storage
    /// to push another site's cookies out through the total limit.
    @Test func oneSitesSubdomainsShareOneLimitAndCannotEvictAnotherSite() throws {
        let storage = HTTPCookieStorage()
        storage.setCookie(Self.cookie("sid", domain: "app.example.com"))
        let perSite = HTTPCookieStorage.maximumCookiesPerDomain
        let subdomains = HTTPCookieStorage.maximumCookies / perSite + 1
        for subdomain in 0..<subdomains {
            for index in 0..<perSite {
                storage.setCookie(Self.cookie("c\(index)", domain: "s\(subdomain).flood.example.org"))
            }
        }
        let app = try #require(URL(string: "http://app.example.com/"))
        #expect(storage.cookies(for: app)?.map(\.name) == ["sid"])
        let flood = storage.cookies?.filter { $0.domain.hasSuffix("flood.example.org") } ?? []
        #expect(flood.count == perSite)
        // The newest stay: all of them on the last subdomain.
        #expect(flood.allSatisfy { $0.domain == "s\(subdomains - 1).flood.example.org" })
        // Separate sites under one public suffix keep separate limits; IP addresses count one by one.
        let separate = HTTPCookieStorage()
        for index in 0..<perSite {
            separate.setCookie(Self.cookie("a\(index)", domain: "one.github.io"))
            separate.setCookie(Self.cookie("b\(index)", domain: "two.github.io"))
            separate.setCookie(Self.cookie("c\(index)", domain: "10.0.0.1"))
            separate.setCookie(Self.cookie("d\(index)", domain: "10.0.0.2"))
        }
        #expect(separate.cookies?.count == 4 * perSite)
    }

    /// A plain-`http` response's cookies are checked against the stored `Secure` cookies (RFC 6265bis §5.7) without
    /// listing the whole storage for each of them: a hostile server's thousands of cookies in one response, stored on
    /// a network thread against a full storage, cost one listing (each listing copies and sorts up to 10,000).
    @Test func manyCookiesFromAPlainHTTPResponseListTheStorageOnce() throws {
        let storage = ListingCountingStorage()
        for index in 0..<1000 {
            storage.setCookie(Self.cookie("n", domain: "d\(index).test", secure: index % 100 == 0))
        }
        let url = try #require(URL(string: "http://hostile.test/"))
        let incoming = (0..<3000).map { Self.cookie("c\($0)", domain: "hostile.test") }
        storage.listings.withLockedValue { $0 = 0 }
        storage.setCookies(incoming, for: url, mainDocumentURL: nil)
        #expect(storage.listings.withLockedValue { $0 } <= 1)
        #expect(storage.cookies(for: url)?.count == HTTPCookieStorage.maximumCookiesPerDomain)

        // The check itself still holds: a Secure cookie is neither overwritten nor shadowed from plain http.
        let small = HTTPCookieStorage()
        small.setCookie(Self.cookie("sid", domain: "site.test", secure: true))
        let plain = try #require(URL(string: "http://site.test/app"))
        let attempts = [
            Self.cookie("sid", domain: "site.test"),
            Self.cookie("sid", domain: "site.test", path: "/app"),
            Self.cookie("theme", domain: "site.test"),
        ]
        small.setCookies(attempts, for: plain, mainDocumentURL: nil)
        #expect(small.cookies?.map(\.name) == ["sid", "theme"])
        #expect(small.cookies?.first?.isSecure == true)
    }

    @Test func lookupsFindTheHostsAndItsParentDomainsCookiesOnly() {
        let storage = HTTPCookieStorage()
        storage.setCookie(Self.cookie("parent", domain: ".example.test"))
        storage.setCookie(Self.cookie("host", domain: "www.example.test"))
        storage.setCookie(Self.cookie("deep", domain: "www.example.test", path: "/a/b"))
        storage.setCookie(Self.cookie("other", domain: "example.org"))
        storage.setCookie(Self.cookie("secure", domain: "www.example.test", secure: true))
        storage.setCookie(Self.cookie("ip", domain: "127.0.0.1"))
        func names(_ url: String) -> [String] { storage.cookies(for: URL(string: url)!)?.map(\.name) ?? [] }
        // Longer paths first, then the order stored.
        #expect(names("http://www.example.test/a/b/c") == ["deep", "parent", "host"])
        #expect(names("https://WWW.example.test/") == ["parent", "host", "secure"])
        #expect(names("http://example.test/") == ["parent"])
        #expect(names("http://other.example.test/") == ["parent"])
        #expect(names("http://example.org/") == ["other"])
        #expect(names("http://127.0.0.1/") == ["ip"])
        #expect(names("http://0.0.1/") == [])
    }

    @Test func changingTheAcceptPolicyPostsOnce() async throws {
        let storage = HTTPCookieStorage()
        let posted = NIOLockedValueBox(0)
        let observer = NotificationCenter.default.addObserver(
            forName: .NSHTTPCookieManagerAcceptPolicyChanged, object: storage, queue: nil
        ) { _ in posted.withLockedValue { $0 += 1 } }
        defer { NotificationCenter.default.removeObserver(observer) }
        storage.cookieAcceptPolicy = .never
        storage.cookieAcceptPolicy = .never
        storage.cookieAcceptPolicy = .always
        let deadline = ContinuousClock.now + .seconds(30)
        while posted.withLockedValue({ $0 }) < 2, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        try await Task.sleep(for: .milliseconds(50))
        #expect(posted.withLockedValue { $0 } == 2)
    }

    @Test func groupJarsLiveUnderTheSharedDataFolder() {
        let folder = StoreLocation.groupFolder("group.example/x", environment: ["XDG_DATA_HOME": "/data"])
        #expect(folder.path == "/data/courier/groups/group.example_x")
    }
}

/// Counts the listings of the whole storage (`cookies`), which copy and sort every stored cookie.
private final class ListingCountingStorage: HTTPCookieStorage, @unchecked Sendable {
    let listings = NIOLockedValueBox(0)

    override var cookies: [HTTPCookie]? {
        listings.withLockedValue { $0 += 1 }
        return super.cookies
    }
}
