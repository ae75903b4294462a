import CourierHTTP
import Foundation
import Testing

/// The `Set-Cookie` behaviour that apps written for Darwin and FoundationNetworking rely on, from the cases of
/// swift-corelibs-foundation's `TestHTTPCookie`.
@Suite("SetCookie compatibility")
struct SetCookieCompatibilityTests {
    private let now = Date(timeIntervalSince1970: 1_700_000_000)

    private func parse(_ value: String, host: String = "example.com", path: String = "") -> SetCookie? {
        SetCookie.parse(value, host: host, requestPath: path, now: now)
    }

    @Test(
        "A comma separates cookies only when a token and = follow it",
        arguments: [
            (
                "n=v; Comment=real value, tok@en=second; CommentURL=https://example.com/second",
                ["n=v; Comment=real value, tok@en=second; CommentURL=https://example.com/second"]
            ),
            (
                "AAA =1; expires=Sun, 16-Aug-2025 22:39:54 GMT, BBB=2; path=/",
                ["AAA =1; expires=Sun, 16-Aug-2025 22:39:54 GMT", "BBB=2; path=/"]
            ),
            ("a=1, b =2", ["a=1", "b =2"]),
            ("a=1; secure; httponly,\nb=2; path=/", ["a=1; secure; httponly", "b=2; path=/"]),
            ("a=1,\r\n\tb=2", ["a=1", "b=2"]),
            ("a=1; Comment=x, b c=2", ["a=1; Comment=x, b c=2"]),
            ("a=1; Comment=x, (b)=2", ["a=1; Comment=x, (b)=2"]),
        ])
    func split(combined: String, expected: [String]) {
        #expect(SetCookie.split(combined: combined) == expected)
    }

    @Test(
        "Expires accepts RFC 1123, RFC 850 and asctime dates",
        arguments: [
            "Wed, 01 Jan 2020 12:30:00 GMT", "Wednesday, 01-Jan-20 12:30:00 GMT", "Wed, 01-Jan-2020 12:30:00 GMT",
            "Wed Jan  1 12:30:00 2020", "Wed Jan 1 12:30:00 2020",
        ])
    func dateFormats(date: String) throws {
        let cookie = try #require(parse("a=1; expires=\(date); path=/"))
        #expect(cookie.expires == Date(timeIntervalSince1970: 1_577_881_800))
    }

    @Test("Flags count only without a value")
    func valuedFlags() throws {
        let valued = try #require(parse("name=value;Secure=1;Discard=TRUE;HttpOnly=Yes"))
        #expect(!valued.isSecure)
        #expect(!valued.isHTTPOnly)
        #expect(!valued.isDiscard)
        let bare = try #require(parse("name=value;Secure;Comment;Discard;CommentURL;HttpOnly"))
        #expect(bare.isSecure)
        #expect(bare.isHTTPOnly)
        #expect(bare.isDiscard)
        #expect(bare.comment == nil)
        #expect(bare.commentURL == nil)
    }

    @Test("Comment and CommentURL are kept; attributes without a name are ignored")
    func comments() throws {
        let cookie = try #require(parse("name=value;Comment=value1;   =value2;CommentURL=value3"))
        #expect(cookie.name == "name")
        #expect(cookie.value == "value")
        #expect(cookie.comment == "value1")
        #expect(cookie.commentURL == "value3")
        let joined = try #require(
            parse("n=v; Comment=real value, tok@en=second; CommentURL=https://example.com/second"))
        #expect(joined.comment == "real value, tok@en=second")
        #expect(joined.commentURL == "https://example.com/second")
    }

    @Test(
        "Domain is lowercased and loses its leading dot",
        arguments: [
            ("eXample.com", "eXample.com", "example.com"), (".eXample.com", "eXample.com", "example.com"),
            ("a.eXample.com", "a.eXample.com", "a.example.com"), ("EXAMPLE.com", "www.example.com", "example.com"),
        ])
    func domainCanonicalisation(domain: String, host: String, expected: String) throws {
        let cookie = try #require(parse("PREF=a=b; path=/; domain=\(domain)", host: host))
        #expect(cookie.domain == expected)
        #expect(!cookie.isHostOnly)
        #expect(cookie.value == "a=b")
    }
}
