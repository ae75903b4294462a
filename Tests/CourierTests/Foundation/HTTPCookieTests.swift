import Courier
import Foundation
import Testing

@Suite("HTTPCookie")
struct HTTPCookieTests {
    private let url = URL(string: "https://www.example.com/account/login")!

    @Test("Creating from properties")
    func fromProperties() throws {
        let expires = Date(timeIntervalSince1970: 2_000_000_000)
        let cookie = try #require(
            HTTPCookie(properties: [
                .name: "id", .value: "42", .domain: ".Example.com", .path: "/", .secure: "TRUE", .expires: expires,
                .sameSitePolicy: "Lax", .comment: "hello", .port: "443,8443",
            ]))
        #expect(cookie.name == "id")
        #expect(cookie.value == "42")
        #expect(cookie.domain == ".example.com")
        #expect(cookie.path == "/")
        #expect(cookie.isSecure)
        #expect(!cookie.isHTTPOnly)
        #expect(cookie.expiresDate == expires)
        #expect(!cookie.isSessionOnly)
        #expect(cookie.version == 0)
        #expect(cookie.sameSitePolicy == .sameSiteLax)
        #expect(cookie.comment == "hello")
        #expect(cookie.portList == [NSNumber(value: 443)])
        #expect(cookie.properties?[.name] as? String == "id")
        #expect(cookie.properties?[.domain] as? String == ".example.com")
    }

    @Test("Origin URL supplies a host-only domain")
    func originURL() throws {
        let cookie = try #require(HTTPCookie(properties: [.name: "a", .value: "1", .path: "/", .originURL: url]))
        #expect(cookie.domain == "www.example.com")
        #expect(cookie.isSessionOnly)
        #expect(cookie.expiresDate == nil)
    }

    @Test(
        "Required properties and hostile values",
        arguments: [
            [HTTPCookiePropertyKey.value: "1", .path: "/", .domain: "example.com"],
            [.name: "a", .path: "/", .domain: "example.com"],
            [.name: "a", .value: "1", .domain: "example.com"],
            [.name: "a", .value: "1", .path: "/"],
            [.name: "", .value: "1", .path: "/", .domain: "example.com"],
            [.name: "a=b", .value: "1", .path: "/", .domain: "example.com"],
            [.name: "a", .value: "1; admin=true", .path: "/", .domain: "example.com"],
            [.name: "a", .value: "1\r\nX-Injected: yes", .path: "/", .domain: "example.com"],
            [.name: 5, .value: "1", .path: "/", .domain: "example.com"],
        ] as [[HTTPCookiePropertyKey: Any & Sendable]])
    func invalidProperties(properties: [HTTPCookiePropertyKey: Any & Sendable]) {
        #expect(HTTPCookie(properties: properties) == nil)
    }

    @Test("Max-Age is honoured for version 1 cookies only")
    func maximumAge() throws {
        let version0 = try #require(
            HTTPCookie(properties: [.name: "a", .value: "1", .path: "/", .domain: "x.com", .maximumAge: "100"]))
        let version1 = try #require(
            HTTPCookie(properties: [
                .name: "a", .value: "1", .path: "/", .domain: "x.com", .maximumAge: "100", .version: "1",
            ]))
        #expect(version0.expiresDate == nil)
        let expiry = try #require(version1.expiresDate)
        #expect(abs(expiry.timeIntervalSinceNow - 100) < 5)
        #expect(version1.version == 1)
    }

    @Test("Request header fields")
    func requestHeaderFields() throws {
        let first = try #require(HTTPCookie(properties: [.name: "a", .value: "1", .path: "/", .domain: "x.com"]))
        let second = try #require(HTTPCookie(properties: [.name: "b", .value: "2", .path: "/", .domain: "x.com"]))
        #expect(HTTPCookie.requestHeaderFields(with: [first, second]) == ["Cookie": "a=1; b=2"])
        #expect(HTTPCookie.requestHeaderFields(with: []).isEmpty)
    }

    @Test("Parsing Set-Cookie response headers")
    func responseHeaders() throws {
        let cookies = HTTPCookie.cookies(
            withResponseHeaderFields: [
                "set-cookie":
                    "session=abc; Path=/; HttpOnly; Secure, theme=dark; Domain=example.com; "
                    + "Expires=Wed, 21 Oct 2037 07:28:00 GMT, local=1",
                "Content-Type": "text/html",
            ], for: url)
        #expect(cookies.map(\.name) == ["session", "theme", "local"])
        let session = try #require(cookies.first)
        #expect(session.isHTTPOnly && session.isSecure)
        #expect(session.domain == "www.example.com")
        #expect(session.isSessionOnly)
        let theme = cookies[1]
        #expect(theme.domain == ".example.com")
        #expect(theme.expiresDate == Date(timeIntervalSince1970: 2_139_722_880))
        #expect(cookies[2].path == "/account")
    }

    @Test(
        "Hostile Set-Cookie values are ignored",
        arguments: [
            "a=1; Domain=evil.com", "a=1; Domain=.com", "missing-equals", "=nameless",
            "a=" + String(repeating: "x", count: 5000), "a=1\u{00}",
        ])
    func hostileSetCookie(value: String) {
        let cookies = HTTPCookie.cookies(withResponseHeaderFields: ["Set-Cookie": value], for: url)
        #expect(cookies.isEmpty)
    }

    @Test("Equality covers name, value, domain and path")
    func equality() throws {
        let properties: [HTTPCookiePropertyKey: Any] = [.name: "a", .value: "1", .path: "/", .domain: "x.com"]
        let lhs = try #require(HTTPCookie(properties: properties))
        let rhs = try #require(HTTPCookie(properties: properties))
        var changed = properties
        changed[.value] = "2"
        let other = try #require(HTTPCookie(properties: changed))
        #expect(lhs == rhs)
        #expect(lhs.hash == rhs.hash)
        #expect(lhs != other)
    }
}
