import CourierHTTP
import CourierTransport
import Foundation
import Testing

@Suite("Endpoint")
struct EndpointTests {
    @Test(arguments: [
        ("http://example.com/", "example.com", 80, "example.com", "/"),
        ("https://example.com:8443/a?b=c", "example.com", 8443, "example.com:8443", "/a?b=c"),
        ("http://[::1]:8080/x%20y", "::1", 8080, "[::1]:8080", "/x%20y"),
        ("http://127.0.0.1", "127.0.0.1", 80, "127.0.0.1", "/"),
    ])
    func parsesURLs(url: String, host: String, port: Int, hostHeader: String, target: String) throws {
        let parsed = try #require(URL(string: url))
        let endpoint = try Endpoint(url: parsed)
        #expect(endpoint.host == host)
        #expect(endpoint.port == port)
        #expect(endpoint.hostHeader == hostHeader)
        #expect(Endpoint.requestTarget(of: parsed) == target)
    }

    @Test func ipLiteralsAreRecognised() {
        #expect(Endpoint(scheme: .https, host: "::1", port: 1).hostIsIPLiteral)
        #expect(Endpoint(scheme: .https, host: "10.0.0.1", port: 1).hostIsIPLiteral)
        #expect(!Endpoint(scheme: .https, host: "example.com", port: 1).hostIsIPLiteral)
        #expect(!Endpoint(scheme: .https, host: "1.2.3.example", port: 1).hostIsIPLiteral)
    }

    @Test func rejectsOtherSchemesAndMissingHosts() throws {
        #expect(throws: TransferError.self) { try Endpoint(url: try #require(URL(string: "ftp://a.example/"))) }
        #expect(throws: TransferError.self) { try Endpoint(url: try #require(URL(string: "http:///x"))) }
    }

    /// The error's text names the URL without its password (it ends up in the app's logs), in each `badURL` case.
    @Test(arguments: ["http+unix://alice:s3cret@relative/x"])
    func errorTextsLeaveThePasswordOut(url: String) throws {
        let parsed = try #require(URL(string: url))
        do {
            let endpoint = try Endpoint(url: parsed)
            Issue.record("accepted \(endpoint)")
        } catch {
            #expect(error.urlErrorCode == .badURL)
            #expect(!error.detail.contains("s3cret"))
            #expect(error.detail.contains("http+unix://relative/x"))
        }
    }

    /// A percent-encoded host decodes to bytes that would end the `Host:` line, a proxy's absolute-form request line
    /// or a `CONNECT` line: refused before anything is written.
    @Test(arguments: [
        "http://a%0D%0AX-Injected%3A%20yes.example/",
        "https://a%0Ab.example/",
        "http://a%00b.example/",
        "http://a%20b.example/",
        "http://good.example%2Fevil/",
        "http://good.example%3A80%40evil.example/",
        "http://[fe80::1%25%0D%0A]/",
        // A non-ASCII host with no IDNA form is no host name either.
        "http://%C3%BC..example/", "http://xn--%C3%BC.example/", "http://%C3%BC%2541.example/",
    ])
    func refusesHostsThatWouldBreakTheRequestHead(url: String) throws {
        let parsed = try #require(URL(string: url))
        do {
            let endpoint = try Endpoint(url: parsed)
            Issue.record("accepted the host \(endpoint.host.debugDescription)")
        } catch {
            #expect(error.urlErrorCode == .badURL)
        }
    }

    /// A zone names an interface of this machine: it is used to connect, never sent (RFC 6874 §4), neither in `Host`
    /// (nor the absolute-form target built from it) nor in a `CONNECT` authority.
    @Test(arguments: [
        ("http://[fe80::1%25eth0]/", "fe80::1%eth0", "[fe80::1]", "[fe80::1]:80"),
        ("https://[fe80::1%25en0]:8443/x", "fe80::1%en0", "[fe80::1]:8443", "[fe80::1]:8443"),
        ("http://[::1%251]:8080/", "::1%1", "[::1]:8080", "[::1]:8080"),
        ("http://[::1]:8080/", "::1", "[::1]:8080", "[::1]:8080"),
    ])
    func aZoneIsNeverWrittenIntoTheRequestHead(url: String, host: String, hostHeader: String, authority: String) throws
    {
        let parsed = try #require(URL(string: url))
        let endpoint = try Endpoint(url: parsed)
        #expect(endpoint.host == host)
        #expect(endpoint.hostHeader == hostHeader)
        #expect(endpoint.authority == authority)
    }

    @Test(arguments: [
        ("http://[fe80::1%25eth0]/", "fe80::1%eth0"), ("http://Exa_mple.com/", "Exa_mple.com"),
        ("http://b%C3%BCcher.de/", "xn--bcher-kva.de"),
    ])
    func acceptsZonesUnderscoresAndUnicodeHosts(url: String, host: String) throws {
        #expect(try Endpoint(url: try #require(URL(string: url))).host == host)
    }

    /// An internationalized host goes out in A-labels (`Host`, SNI, the certificate check, DNS) however the URL
    /// spells it: with the Unicode characters (Foundation converts them) or percent-encoded (RFC 3986 §3.2.2's
    /// form, which `URL.host` decodes to Unicode).
    @Test(arguments: [
        ("http://bücher.example/", "xn--bcher-kva.example", "xn--bcher-kva.example"),
        ("http://b%C3%BCcher.example/", "xn--bcher-kva.example", "xn--bcher-kva.example"),
        ("https://B%C3%9CCHER.example:8443/", "xn--bcher-kva.example", "xn--bcher-kva.example:8443"),
        ("http://%E4%BE%8B%E3%81%88.%E3%83%86%E3%82%B9%E3%83%88/", "xn--r8jz45g.xn--zckzah", "xn--r8jz45g.xn--zckzah"),
    ])
    func internationalizedHostsAreSentAsALabels(url: String, host: String, hostHeader: String) throws {
        let endpoint = try Endpoint(url: try #require(URL(string: url)))
        #expect(endpoint.host == host)
        #expect(endpoint.hostHeader == hostHeader)
        #expect(endpoint.hostHeader.utf8.allSatisfy { $0 < 0x80 })
    }

    @Test func unixSocketURLsNameTheSocketAndConnectAsLocalhost() throws {
        let endpoint = try Endpoint(
            url: try #require(URL(string: "https+unix://%2Fvar%2Frun%2Fd%20aemon.sock/v1/x?y=1")))
        #expect(endpoint.unixSocketPath == "/var/run/d aemon.sock")
        #expect(endpoint.scheme == .https && endpoint.host == "localhost" && endpoint.hostHeader == "localhost")
        #expect(endpoint != (try Endpoint(url: try #require(URL(string: "https://localhost/")))))
        #expect(throws: TransferError.self) { try Endpoint(url: try #require(URL(string: "http+unix://relative/x"))) }
    }
}
