import Courier
import Foundation
import Testing

@Suite("HTTPCookieStorage")
struct HTTPCookieStorageTests {
    private func cookie(
        _ name: String, domain: String = "example.com", path: String = "/", secure: Bool = false,
        expires: Date? = nil
    ) throws -> HTTPCookie {
        var properties: [HTTPCookiePropertyKey: Any] = [.name: name, .value: "v", .domain: domain, .path: path]
        properties[.secure] = secure ? "TRUE" : nil
        properties[.expires] = expires
        return try #require(HTTPCookie(properties: properties))
    }

    @Test(
        "Matching by domain, path, scheme and expiry",
        arguments: [
            ("https://example.com/", ["host", "domain", "secure"]),
            ("http://example.com/", ["host", "domain"]),
            ("https://www.example.com/", ["domain"]),
            ("https://example.com/shop/cart", ["shop", "host", "domain", "secure"]),
            ("https://example.com/shopping", ["host", "domain", "secure"]),
            ("https://EXAMPLE.com/", ["host", "domain", "secure"]),
            ("https://notexample.com/", []),
            ("https://example.org/", []),
        ])
    func matching(urlString: String, expected: [String]) throws {
        let storage = HTTPCookieStorage()
        storage.setCookie(try cookie("host"))
        storage.setCookie(try cookie("domain", domain: ".example.com"))
        storage.setCookie(try cookie("secure", secure: true))
        storage.setCookie(try cookie("shop", path: "/shop"))
        storage.setCookie(try cookie("expired", expires: Date(timeIntervalSinceNow: -60)))
        let url = try #require(URL(string: urlString))
        #expect(storage.cookies(for: url)?.map(\.name) == expected)
    }

    /// Apple: "If the cookie has no port list, [...] the cookie will be sent to any port. Otherwise, the cookie is
    /// only sent to ports specified in the port list."
    @Test(
        "A cookie with a port list goes only to the ports it lists",
        arguments: [
            ("http://example.com:8080/", ["any", "v0", "v1"]),
            ("https://example.com:8443/", ["any", "v1"]),
            ("https://example.com/", ["any", "v1"]),
            ("http://example.com/", ["any"]),
            ("http://example.com:9090/", ["any"]),
        ])
    func portList(urlString: String, expected: [String]) throws {
        let storage = HTTPCookieStorage()
        storage.setCookie(try cookie("any"))
        // A version 0 cookie keeps the first port of the list only.
        storage.setCookie(
            try #require(
                HTTPCookie(properties: [
                    .name: "v0", .value: "v", .domain: "example.com", .path: "/", .port: "8080,443",
                ])))
        storage.setCookie(
            try #require(
                HTTPCookie(properties: [
                    .name: "v1", .value: "v", .domain: "example.com", .path: "/", .version: "1",
                    .port: "8080,8443,443",
                ])))
        let url = try #require(URL(string: urlString))
        #expect(storage.cookies(for: url)?.map(\.name) == expected)
    }

    @Test("A cookie replaces one with the same name, domain and path; an expired one deletes it")
    func replacement() throws {
        let storage = HTTPCookieStorage()
        storage.setCookie(try cookie("a"))
        storage.setCookie(
            try #require(HTTPCookie(properties: [.name: "a", .value: "new", .domain: "example.com", .path: "/"])))
        storage.setCookie(try cookie("a", path: "/other"))
        #expect(storage.cookies?.count == 2)
        #expect(storage.cookies?.first?.value == "new")
        storage.setCookie(try cookie("a", expires: Date(timeIntervalSinceNow: -1)))
        #expect(storage.cookies?.map(\.path) == ["/other"])
    }

    @Test("Delete and remove since a date")
    func deletion() throws {
        let storage = HTTPCookieStorage()
        let first = try cookie("a")
        storage.setCookie(first)
        let checkpoint = Date()
        storage.setCookie(try cookie("b"))
        storage.removeCookies(since: checkpoint)
        #expect(storage.cookies?.map(\.name) == ["a"])
        storage.deleteCookie(first)
        #expect(storage.cookies?.isEmpty == true)
    }

    @Test("Accept policies")
    func acceptPolicies() throws {
        let url = try #require(URL(string: "https://api.example.com/"))
        let storage = HTTPCookieStorage()
        storage.cookieAcceptPolicy = .never
        storage.setCookie(try cookie("never"))
        storage.setCookies([try cookie("never", domain: "api.example.com")], for: url, mainDocumentURL: nil)
        #expect(storage.cookies?.isEmpty == true)

        storage.cookieAcceptPolicy = .onlyFromMainDocumentDomain
        let foreign = try #require(URL(string: "https://tracker.net/"))
        storage.setCookies([try cookie("third", domain: "api.example.com")], for: url, mainDocumentURL: foreign)
        #expect(storage.cookies?.isEmpty == true)
        let main = try #require(URL(string: "https://example.com/"))
        storage.setCookies([try cookie("first", domain: "api.example.com")], for: url, mainDocumentURL: main)
        #expect(storage.cookies?.map(\.name) == ["first"])

        storage.cookieAcceptPolicy = .always
        storage.setCookies(
            [try cookie("mine", domain: ".example.com"), try cookie("theirs", domain: "other.com")], for: url,
            mainDocumentURL: foreign)
        #expect(storage.cookies?.map(\.name) == ["first", "mine"])
    }

    @Test("Shared storages")
    func shared() {
        #expect(HTTPCookieStorage.shared === HTTPCookieStorage.shared)
        let group = HTTPCookieStorage.sharedCookieStorage(forGroupContainerIdentifier: "group.a")
        #expect(group === HTTPCookieStorage.sharedCookieStorage(forGroupContainerIdentifier: "group.a"))
        #expect(group !== HTTPCookieStorage.sharedCookieStorage(forGroupContainerIdentifier: "group.b"))
        #expect(group !== HTTPCookieStorage.shared)
    }

    @Test("Cookies parsed from a response round-trip through the storage")
    func roundTrip() throws {
        let url = try #require(URL(string: "https://www.example.com/app/index"))
        let storage = HTTPCookieStorage()
        let parsed = HTTPCookie.cookies(
            withResponseHeaderFields: ["Set-Cookie": "a=1, b=2; Domain=example.com; Path=/"], for: url)
        storage.setCookies(parsed, for: url, mainDocumentURL: nil)
        let sent = storage.cookies(for: try #require(URL(string: "https://www.example.com/app/other"))) ?? []
        #expect(HTTPCookie.requestHeaderFields(with: sent) == ["Cookie": "a=1; b=2"])
        let sibling = storage.cookies(for: try #require(URL(string: "https://shop.example.com/"))) ?? []
        #expect(sibling.map(\.name) == ["b"])
    }
}
