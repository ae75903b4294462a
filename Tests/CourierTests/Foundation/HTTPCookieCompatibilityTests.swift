import Courier
import Foundation
import Testing

/// swift-corelibs-foundation's `TestHTTPCookie`, ported: the behaviour apps switching from FoundationNetworking rely
/// on. Where Courier keeps a deliberate RFC 6265 rule, the test says so.
@Suite("HTTPCookie compatibility")
struct HTTPCookieCompatibilityTests {
    private func cookies(_ setCookie: String, url: String = "https://example.com") throws -> [HTTPCookie] {
        HTTPCookie.cookies(withResponseHeaderFields: ["Set-Cookie": setCookie], for: try #require(URL(string: url)))
    }

    @Test("Basic construction: domain or origin URL required, v0 Discard has no expiry")
    func basicConstruction() throws {
        #expect(HTTPCookie(properties: [.name: "TestCookie", .value: "Test value @#$%^$&*", .path: "/"]) == nil)
        let minimal = try #require(
            HTTPCookie(properties: [
                .name: "TestCookie", .value: "Test value @#$%^$&*", .path: "/", .domain: "apple.com",
            ]))
        #expect(minimal.name == "TestCookie")
        #expect(minimal.value == "Test value @#$%^$&*")
        #expect(minimal.domain == "apple.com")
        let origin = try #require(URL(string: "https://apple.com"))
        let fromOrigin = HTTPCookie(properties: [.name: "T", .value: "v", .path: "/", .originURL: origin])
        #expect(fromOrigin?.domain == "apple.com")
        let both = HTTPCookie(properties: [
            .name: "T", .value: "v", .path: "/", .domain: "apple.com",
            .originURL: try #require(URL(string: "https://a.b")),
        ])
        #expect(both?.domain == "apple.com")

        let versionZero = try #require(
            HTTPCookie(properties: [
                .name: "TestCookie", .value: "Test value @#$%^$&*", .path: "/", .domain: "apple.com",
                .originURL: origin, .comment: "kept", .commentURL: "https://apple.com", .discard: "TRUE",
                .expires: Date(timeIntervalSince1970: 1000), .maximumAge: "2000", .port: "443,8443", .secure: "YES",
            ]))
        #expect(versionZero.version == 0)
        #expect(versionZero.comment == "kept")
        #expect(versionZero.commentURL == URL(string: "https://apple.com"))
        #expect(versionZero.isSessionOnly)
        #expect(versionZero.expiresDate == nil)
        #expect(versionZero.portList == [NSNumber(value: 443)])
        #expect(versionZero.isSecure)
    }

    @Test("A Substring name is accepted")
    func substringName() {
        let cookie = HTTPCookie(properties: [
            .domain: ".", .path: "/", .name: "davesy".dropLast(), .value: "Jonesy".dropLast(),
        ])
        #expect(cookie?.name == "daves")
    }

    @Test("One cookie among other header fields")
    func oneCookie() {
        let header = [
            "header1": "value1",
            "Set-Cookie": "fr=anjd&232; Max-Age=7776000; path=/; domain=.example.com; secure; httponly",
            "header2": "value2",
        ]
        let cookies = HTTPCookie.cookies(withResponseHeaderFields: header, for: URL(string: "https://example.com")!)
        #expect(cookies.map(\.name) == ["fr"])
        #expect(cookies.first?.value == "anjd&232")
        #expect(HTTPCookie.cookies(withResponseHeaderFields: ["a": "b"], for: URL(string: "https://x.org")!).isEmpty)
    }

    /// FoundationNetworking also accepts the second cookie's `domain=.example2.com`; Courier drops it, because
    /// example.com may not set cookies for another site (RFC 6265 §5.3 step 6).
    @Test("Two cookies in one field; a foreign domain is dropped alone")
    func twoCookies() throws {
        let joined = "fr=a&2@#; Max-Age=1186000; path=/; domain=.example.com; secure, xd=plm!@#;path=/;domain="
        let parsed = try cookies(joined + ".example.com")
        #expect(parsed.map(\.name) == ["fr", "xd"])
        #expect(parsed.map(\.isSecure) == [true, false])
        #expect(try cookies(joined + ".example2.com").map(\.name) == ["fr"])
    }

    @Test("Without Domain and Path: host-only, path /, RFC 1123 and RFC 850 dates")
    func noDomain() throws {
        let first = try #require(
            try cookies("fr=anjd&232; expires=Wed, 21 Sep 2016 05:33:00 GMT; path=/; secure; httponly").first)
        #expect(first.version == 0)
        #expect(first.domain == "example.com")
        #expect(first.expiresDate == Date(timeIntervalSince1970: 1_474_435_980))
        let second = try #require(try cookies("fr=tx; expires=Wed, 21-Sep-2016 05:33:00 GMT; secure; httponly").first)
        #expect(second.domain == "example.com")
        #expect(second.path == "/")
        #expect(second.expiresDate == Date(timeIntervalSince1970: 1_474_435_980))
    }

    @Test(
        "Cookies without a name or a value are ignored",
        arguments: [";attr1=value1", "=value1;attr2=value2", "   =value1;attr2=value2", "name;attr2=value2"])
    func noNameOrValue(header: String) throws {
        #expect(try cookies(header).isEmpty)
    }

    @Test("An attribute without a name is ignored; Comment and CommentURL are kept")
    func namelessAttribute() throws {
        let cookie = try #require(try cookies("name=value;Comment=value1;   =value2;CommentURL=value3").first)
        #expect(cookie.name == "name")
        #expect(cookie.value == "value")
        #expect(cookie.comment == "value1")
        #expect(cookie.commentURL == URL(string: "value3"))
    }

    @Test("Value-less flags are set; value-less Comment and CommentURL are not")
    func valuelessAttributes() throws {
        let cookie = try #require(try cookies("name=value;Secure;Comment;Discard;CommentURL;HttpOnly").first)
        #expect(cookie.isSecure)
        #expect(cookie.isSessionOnly)
        #expect(cookie.isHTTPOnly)
        #expect(cookie.comment == nil)
        #expect(cookie.commentURL == nil)
    }

    /// FoundationNetworking's test expects `isSessionOnly` false for a cookie without an expiry date; on Darwin (and
    /// in Courier) such a cookie is session-only, so the ported test gives the cookie a `Max-Age` to see whether
    /// `Discard=TRUE` made it session-only.
    @Test("Flags with a value are ignored")
    func valuedAttributes() throws {
        let cookie = try #require(try cookies("name=value;Secure=1;Discard=TRUE;HttpOnly=Yes;Max-Age=60").first)
        #expect(!cookie.isSecure)
        #expect(!cookie.isSessionOnly)
        #expect(cookie.expiresDate != nil)
        #expect(!cookie.isHTTPOnly)
    }

    @Test("An invalid path becomes the default path")
    func invalidPath() throws {
        #expect(try cookies("name=value;Path=This/is/not/a/valid/path").first?.path == "/")
    }

    @Test("A value may contain =")
    func equalsInValue() throws {
        let cookie = try #require(try cookies("name=v=a=l=u=e;attr1=value1;attr2=value2").first)
        #expect(cookie.name == "name")
        #expect(cookie.value == "v=a=l=u=e")
    }

    @Test("A comma followed by an invalid token does not start a cookie")
    func secondCookieInvalidToken() throws {
        let parsed = try cookies("n=v; Comment=real value, tok@en=second; CommentURL=https://example.com/second")
        #expect(parsed.count == 1)
        #expect(parsed.first?.name == "n")
        #expect(parsed.first?.comment == "real value, tok@en=second")
        #expect(parsed.first?.commentURL == URL(string: "https://example.com/second"))
    }

    @Test(
        "Expires as the last attribute, and names are trimmed",
        arguments: [
            "AAA=111; path=/; domain=.example.com; expires=Sun, 16-Aug-2025 22:39:54 GMT, BBB=222; path=/; "
                + "domain=.example.com; HttpOnly; expires=Sat, 15-Feb-2034 22:39:54 GMT",
            "AAA =111; path=/; domain=.example.com; expires=Sun, 16-Aug-2025 22:39:54 GMT, BBB=222; path=/; "
                + "domain=.example.com; HttpOnly; expires=Sat, 15-Feb-2034 22:39:54 GMT",
            " AAA=111; path=/; domain=.example.com; expires=Sun, 16-Aug-2025 22:39:54 GMT, BBB=222; path=/; "
                + "domain=.example.com; HttpOnly; expires=Sat, 15-Feb-2034 22:39:54 GMT",
        ])
    func expiresLast(header: String) throws {
        let parsed = try cookies(header, url: "http://www.example.com/")
        #expect(parsed.map(\.name) == ["AAA", "BBB"])
        #expect(parsed.map(\.value) == ["111", "222"])
    }

    /// FoundationNetworking accepts `domain=1.2.3.4` from `eXample.com`; Courier refuses a cookie for a host the
    /// sender does not domain-match (RFC 6265 §5.3 step 6) and checks IP addresses on an IP host instead.
    @Test(
        "Domain canonicalisation",
        arguments: [
            ("http://eXample.com", "; domain=eXample.com", ".example.com"),
            ("http://eXample.com", "; domain=.eXample.com", ".example.com"),
            ("http://a.eXample.com", "; domain=a.eXample.com", ".a.example.com"),
            ("http://a.eXample.com", "", "a.example.com"),
            ("http://1.2.3.4", "; domain=1.2.3.4", "1.2.3.4"),
            ("http://1.2.3.4", "; domain=.1.2.3.4", "1.2.3.4"),
        ])
    func domainCanonicalisation(url: String, domainAttribute: String, expected: String) throws {
        let expires = Self.rfc850(Date(timeIntervalSinceNow: 100))
        let parsed = try cookies("PREF=a=b; expires=\(expires)); path=/" + domainAttribute, url: url)
        #expect(parsed.map(\.domain) == [expected])
        #expect(try cookies("PREF=a=b; path=/; domain=1.2.3.4", url: "http://eXample.com").isEmpty)
    }

    @Test("Three date formats in one joined field")
    func expiresDateFormats() throws {
        let joined = """
            format1=true; expires=Wed, 01 Jan 2020 12:30:00 GMT; path=/; domain=swift.org; secure; httponly,
            format2=true; expires=Wed Jan 1 12:30:00 2020; path=/; domain=swift.org; secure; httponly,
            format3=true; expires=Wed, 01-Jan-2020 12:30:00 GMT; path=/; domain=swift.org; secure; httponly
            """
        let parsed = try cookies(joined, url: "https://swift.org")
        #expect(parsed.map(\.name) == ["format1", "format2", "format3"])
        for cookie in parsed {
            #expect(cookie.expiresDate == Date(timeIntervalSince1970: 1_577_881_800))
            #expect(cookie.domain == ".swift.org")
            #expect(cookie.path == "/")
        }
    }

    /// `Sunday, 06-Nov-94 08:49:37 GMT`, the RFC 850 form FoundationNetworking's test writes.
    private static func rfc850(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEEE',' dd'-'MMM'-'yy HH':'mm':'ss z"
        return formatter.string(from: date)
    }
}
