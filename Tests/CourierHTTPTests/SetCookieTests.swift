import CourierHTTP
import Foundation
import Testing

@Suite("SetCookie")
struct SetCookieTests {
    private let now = Date(timeIntervalSince1970: 1_700_000_000)

    private func parse(_ value: String, host: String = "www.example.com", path: String = "/docs/page") -> SetCookie? {
        SetCookie.parse(value, host: host, requestPath: path, now: now)
    }

    @Test("A plain cookie is host-only with the default path")
    func plain() throws {
        let cookie = try #require(parse("id=a3fWa"))
        #expect(cookie.name == "id")
        #expect(cookie.value == "a3fWa")
        #expect(cookie.domain == "www.example.com")
        #expect(cookie.isHostOnly)
        #expect(cookie.path == "/docs")
        #expect(cookie.expires == nil)
        #expect(!cookie.isSecure && !cookie.isHTTPOnly)
        #expect(cookie.sameSite == nil)
    }

    @Test("Attributes are parsed case-insensitively")
    func attributes() throws {
        let cookie = try #require(
            parse(
                "sid = x y ; DOMAIN=.Example.COM; path=/; SECURE; httponly; SameSite=Strict; "
                    + "Expires=Wed, 21 Oct 2015 07:28:00 GMT"))
        #expect(cookie.name == "sid")
        #expect(cookie.value == "x y")
        #expect(cookie.domain == "example.com")
        #expect(!cookie.isHostOnly)
        #expect(cookie.path == "/")
        #expect(cookie.isSecure && cookie.isHTTPOnly)
        #expect(cookie.sameSite == "strict")
        #expect(cookie.expires == Date(timeIntervalSince1970: 1_445_412_480))
    }

    @Test("Max-Age wins over Expires, whatever the order")
    func maxAgePrecedence() throws {
        let first = try #require(parse("a=1; Max-Age=60; Expires=Wed, 21 Oct 2015 07:28:00 GMT"))
        let second = try #require(parse("a=1; Expires=Wed, 21 Oct 2015 07:28:00 GMT; Max-Age=60"))
        #expect(first.expires == now.addingTimeInterval(60))
        #expect(second.expires == now.addingTimeInterval(60))
    }

    @Test("Max-Age of zero or less expires at once; malformed Max-Age is ignored")
    func maxAgeEdges() throws {
        #expect(try #require(parse("a=1; Max-Age=0")).expires == Date.distantPast)
        #expect(try #require(parse("a=1; Max-Age=-5")).expires == Date.distantPast)
        #expect(try #require(parse("a=1; Max-Age=1e3")).expires == nil)
        #expect(try #require(parse("a=1; Max-Age=")).expires == nil)
        let huge = try #require(parse("a=1; Max-Age=99999999999999999999999"))
        #expect(try #require(huge.expires) > now)
    }

    @Test(
        "Path attribute",
        arguments: [
            ("a=1; Path=/shop", "/shop"), ("a=1; Path=relative", "/docs"), ("a=1; Path=", "/docs"),
            ("a=1; Path=/x; Path=/y", "/y"),
        ])
    func pathAttribute(value: String, expected: String) throws {
        #expect(try #require(parse(value)).path == expected)
    }

    @Test(
        "Domain of another site is rejected",
        arguments: [
            "a=1; Domain=evil.com", "a=1; Domain=notexample.com", "a=1; Domain=com", "a=1; Domain=.com",
            "a=1; Domain=sub.www.example.com", "a=1; Domain=ample.com",
        ])
    func foreignDomain(value: String) {
        #expect(parse(value) == nil)
    }

    @Test("A Domain equal to an IP host is accepted host-only; a parent of an IP is not")
    func ipHosts() throws {
        let cookie = try #require(parse("a=1; Domain=192.168.0.1", host: "192.168.0.1"))
        #expect(cookie.isHostOnly)
        #expect(parse("a=1; Domain=168.0.1", host: "192.168.0.1") == nil)
    }

    @Test(
        "Malformed cookies are rejected",
        arguments: ["novalue", "", ";", "=value", " =value", "a=b\u{01}c", "bad\nname=1"])
    func malformed(value: String) {
        #expect(parse(value) == nil)
    }

    @Test("Huge cookies are rejected and huge attributes ignored")
    func hugeValues() throws {
        let big = String(repeating: "x", count: SetCookie.maximumNameValueBytes)
        #expect(parse("a=" + big) == nil)
        #expect(parse("a=" + big.dropFirst(2)) != nil)
        let longPath = "/" + String(repeating: "p", count: SetCookie.maximumAttributeValueBytes + 1)
        #expect(try #require(parse("a=1; Path=" + longPath)).path == "/docs")
    }

    @Test(
        "Cookies that break their __Secure- or __Host- prefix are ignored",
        arguments: [
            "__Secure-a=1", "__Secure-a=1; Secure=1", "__secure-a=1", "__SECURE-a=1; Path=/",
            "__Host-b=1; Path=/", "__Host-b=1; Secure", "__Host-b=1; Secure; Path=/docs",
            "__Host-b=1; Secure; Path=/; Domain=example.com", "__Host-b=1; Secure; Path=/; Domain=www.example.com",
            "__host-b=1; Path=/",
        ])
    func brokenPrefixes(value: String) {
        #expect(parse(value) == nil)
    }

    @Test("Cookies that keep their prefix's rules are accepted")
    func keptPrefixes() throws {
        #expect(try #require(parse("__Secure-a=1; Secure; Domain=example.com")).isSecure)
        let host = try #require(parse("__Host-b=1; Secure; Path=/"))
        #expect(host.isHostOnly && host.path == "/" && host.domain == "www.example.com")
        // Only the exact prefixes count.
        #expect(parse("_Host-c=1") != nil && parse("__Hostile=1") != nil && parse("__Secured=1") != nil)
    }

    @Test("An empty value is allowed")
    func emptyValue() throws {
        #expect(try #require(parse("a=")).value == "")
    }

    @Test(
        "Combined headers split at cookie boundaries only",
        arguments: [
            ("a=1, b=2", ["a=1", "b=2"]),
            (
                "a=1; Expires=Wed, 21 Oct 2015 07:28:00 GMT, b=2; Path=/",
                [
                    "a=1; Expires=Wed, 21 Oct 2015 07:28:00 GMT", "b=2; Path=/",
                ]
            ),
            ("a=1; Expires=Wed, 21 Oct 2015 07:28:00 GMT", ["a=1; Expires=Wed, 21 Oct 2015 07:28:00 GMT"]),
            (" , a=1,, ", ["a=1,,"]),
            ("", []),
        ])
    func split(combined: String, expected: [String]) {
        #expect(SetCookie.split(combined: combined) == expected)
    }
}
