import CourierHTTP
import Testing

@Suite("CookieMatching")
struct CookieMatchingTests {
    @Test(
        "Domain matching",
        arguments: [
            ("example.com", "example.com", true), ("www.example.com", "example.com", true),
            ("www.example.com", ".example.com", true), ("WWW.Example.COM", "example.com", true),
            ("example.com", "www.example.com", false), ("notexample.com", "example.com", false),
            ("example.com", "com.", false), ("192.168.0.1", "168.0.1", false), ("192.168.0.1", "192.168.0.1", true),
            ("example.com", "", false), ("example.com", ".", false),
        ])
    func domain(host: String, domain: String, matches: Bool) {
        #expect(CookieMatching.domainMatches(host: host, domain: domain) == matches)
    }

    @Test(
        "Path matching",
        arguments: [
            ("/", "/", true), ("/docs", "/", true), ("/docs", "/docs", true), ("/docs/a", "/docs", true),
            ("/docs/a", "/docs/", true), ("/docsearch", "/docs", false), ("/doc", "/docs", false), ("", "/", true),
            ("/Docs", "/docs", false), ("/docs", "", true),
            // Octets, not characters (RFC 6265 §5.1.4): a precomposed é is not an e and a combining accent.
            ("/caf\u{E9}", "/cafe\u{301}", false), ("/cafe\u{301}/a", "/caf\u{E9}", false),
            ("/caf\u{E9}/a", "/caf\u{E9}", true), ("/docs/\u{301}", "/docs", true),
        ])
    func path(requestPath: String, cookiePath: String, matches: Bool) {
        #expect(CookieMatching.pathMatches(requestPath: requestPath, cookiePath: cookiePath) == matches)
    }

    @Test(
        "Default path",
        arguments: [("", "/"), ("/", "/"), ("/a", "/"), ("/a/b", "/a"), ("/a/b/", "/a/b"), ("relative", "/")])
    func defaultPath(requestPath: String, expected: String) {
        #expect(CookieMatching.defaultPath(for: requestPath) == expected)
    }

    @Test(
        "IP addresses",
        arguments: [
            ("127.0.0.1", true), ("::1", true), ("[::1]", true), ("256.0.0.1", false), ("1.2.3", false),
            ("example.com", false), ("1.2.3.4.example", false), ("1.2.3.4.", false), (".1.2.3", false),
            ("1..2.3", false), ("01.2.3.255", true), ("1.2.3.256", false), ("1111.2.3.4", false), ("1.2.3.4a", false),
            ("0.0.0.0", true), ("", false), ("\u{661}.2.3.4", false),
        ])
    func ipAddress(host: String, isIP: Bool) {
        #expect(CookieMatching.isIPAddress(host) == isIP)
    }

    @Test(
        "Secure schemes",
        arguments: [("https", true), ("HTTPS", true), ("wss", true), ("http", false), ("ws", false), (nil, false)])
    func secureScheme(scheme: String?, secure: Bool) {
        #expect(CookieMatching.isSecureScheme(scheme) == secure)
    }

    /// RFC 6265bis §5.7: which new cookies from a non-secure origin would overwrite or shadow a stored Secure one.
    @Test(
        "Shadowing a Secure cookie",
        arguments: [
            // name, domain, path of the new cookie; stored name, domain, path, secure; shadows?
            ("id", "example.com", "/", "id", "example.com", "/", true, true),
            ("id", "example.com", "/app", "id", "example.com", "/", true, true),
            ("id", "www.example.com", "/", "id", ".example.com", "/", true, true),
            ("id", ".example.com", "/", "id", "www.example.com", "/", true, true),
            ("id", "example.com", "/", "id", "example.com", "/app", true, false),
            ("id", "example.com", "/", "id", "example.com", "/", false, false),
            ("other", "example.com", "/", "id", "example.com", "/", true, false),
            ("ID", "example.com", "/", "id", "example.com", "/", true, false),
            ("id", "example.org", "/", "id", "example.com", "/", true, false),
        ])
    func shadowing(
        name: String, domain: String, path: String, storedName: String, storedDomain: String, storedPath: String,
        storedIsSecure: Bool, shadows: Bool
    ) {
        #expect(
            CookieMatching.shadowsSecureCookie(
                name: name, domain: domain, path: path, storedName: storedName, storedDomain: storedDomain,
                storedPath: storedPath, storedIsSecure: storedIsSecure) == shadows)
    }
}
