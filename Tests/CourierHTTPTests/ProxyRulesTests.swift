import CourierHTTP
import Foundation
import Testing

/// Which proxy a URL goes through: Darwin's proxy dictionary, curl's environment variables, and the exceptions.
@Suite("Proxy rules")
struct ProxyRulesTests {
    private func url(_ text: String) throws -> URL { try #require(URL(string: text)) }

    @Test func darwinsDictionaryPicksAProxyPerScheme() throws {
        let rules = ProxyRules(dictionary: [
            "HTTPEnable": 1, "HTTPProxy": "proxy.example", "HTTPPort": 3128,
            "HTTPSEnable": true, "HTTPSProxy": "[::1]", "HTTPSPort": "8443",
            "ExceptionsList": ["*.local", "169.254/16", "10.0.0.0/8"], "ExcludeSimpleHostnames": 1,
        ])
        #expect(
            rules.proxy(for: try url("http://a.example/"))
                == ProxyServer(kind: .http, host: "proxy.example", port: 3128))
        #expect(rules.proxy(for: try url("https://a.example/")) == ProxyServer(kind: .http, host: "::1", port: 8443))
        #expect(rules.proxy(for: try url("http://printer.local/")) == nil)
        #expect(rules.proxy(for: try url("http://169.254.3.4/")) == nil)
        #expect(rules.proxy(for: try url("http://10.200.0.1:8080/")) == nil)
        #expect(rules.proxy(for: try url("http://intranet/")) == nil)  // a simple host name
        #expect(rules.proxy(for: try url("http+unix://%2Frun%2Fd.sock/")) == nil)
        #expect(rules.proxy(for: try url("data:,x")) == nil)
        // Disabled entries and entries without a host configure nothing.
        #expect(ProxyRules(dictionary: ["HTTPEnable": 0, "HTTPProxy": "p"]).isEmpty)
        #expect(ProxyRules(dictionary: ["HTTPEnable": 1]).isEmpty)
        let socks = ProxyRules(dictionary: ["SOCKSEnable": 1, "SOCKSProxy": "s.example"])
        #expect(
            socks.proxy(for: try url("https://a.example/")) == ProxyServer(kind: .socks5, host: "s.example", port: 1080)
        )
    }

    @Test func theEnvironmentIsReadAsCurlReadsIt() throws {
        let rules = ProxyRules(environment: [
            "http_proxy": "http://user:p%40ss@proxy.example:3128/",
            "HTTP_PROXY": "http://ignored.example",
            "HTTPS_PROXY": "secure.example:8080",
            "no_proxy": "localhost, .internal.example, 192.168.0.0/16, [::1], cache.example:8080",
        ])
        let http = try #require(rules.proxy(for: try url("http://a.example/")))
        #expect(http.host == "proxy.example" && http.port == 3128 && http.user == "user" && http.password == "p@ss")
        #expect(rules.proxy(for: try url("https://a.example/"))?.authority == "secure.example:8080")
        #expect(rules.proxy(for: try url("http://localhost:9000/")) == nil)
        #expect(rules.proxy(for: try url("http://api.internal.example/")) == nil)
        #expect(rules.proxy(for: try url("http://internal.example/")) == nil)
        #expect(rules.proxy(for: try url("http://notinternal.example/")) != nil)
        #expect(rules.proxy(for: try url("http://192.168.7.7/")) == nil)
        #expect(rules.proxy(for: try url("http://[::1]/")) == nil)
        #expect(rules.proxy(for: try url("http://cache.example:8080/")) == nil)
        #expect(rules.proxy(for: try url("http://cache.example/")) != nil)
        // Only the lower-case http_proxy counts (HTTP_PROXY is a request header under CGI).
        #expect(ProxyRules(environment: ["HTTP_PROXY": "p.example"]).proxy(for: try url("http://a.example/")) == nil)
        #expect(
            ProxyRules(environment: ["ALL_PROXY": "socks5h://s.example", "no_proxy": "*"])
                .proxy(for: try url("http://a.example/")) == nil)
        #expect(
            ProxyRules(environment: ["ALL_PROXY": "socks5h://s.example"]).proxy(for: try url("https://a.example/"))?
                .kind
                == .socks5)
    }

    /// A proxy variable that is set but names a proxy Courier cannot speak (curl speaks `https://` proxies and
    /// SOCKS4) is not skipped: the URLs it was meant for fail (`unusableSetting(for:)`) instead of going direct,
    /// past the proxy, or through the fallback.
    @Test func aProxyVariableCourierCannotSpeakIsNeverBypassed() throws {
        let rules = ProxyRules(environment: [
            "https_proxy": "https://tls-proxy.example:8443", "all_proxy": "socks5://s.example",
            "no_proxy": "direct.example",
        ])
        #expect(!rules.isEmpty)
        for text in ["https://a.example/", "wss://a.example/"] {
            let meant = try url(text)
            #expect(rules.proxy(for: meant) == nil)
            #expect(rules.unusableSetting(for: meant) == "https_proxy")
        }
        // Other schemes keep their proxy, and exceptions still go direct.
        #expect(rules.proxy(for: try url("http://a.example/"))?.kind == .socks5)
        #expect(rules.unusableSetting(for: try url("http://a.example/")) == nil)
        #expect(rules.proxy(for: try url("https://direct.example/")) == nil)
        #expect(rules.unusableSetting(for: try url("https://direct.example/")) == nil)
        let socks4 = ProxyRules(environment: ["ALL_PROXY": "socks4://s.example"])
        #expect(socks4.unusableSetting(for: try url("http://a.example/")) == "ALL_PROXY")
        #expect(socks4.unusableSetting(for: try url("https://a.example/")) == "ALL_PROXY")
        // Blank variables set nothing.
        #expect(ProxyRules(environment: ["https_proxy": "  ", "no_proxy": "x.example"]).isEmpty)
    }

    /// Without a port, a proxy variable means port 1080, HTTP proxies included: libcurl's default, which code moving
    /// from FoundationNetworking relies on.
    @Test func aProxyVariableWithoutAPortMeansCurlsDefault() {
        #expect(ProxyServer(environmentValue: "p.example")?.port == 1080)
        #expect(ProxyServer(environmentValue: "http://user:pw@p.example/")?.port == 1080)
        #expect(ProxyServer(environmentValue: "socks5h://s.example")?.port == 1080)
        #expect(ProxyServer(environmentValue: "http://p.example:3128")?.port == 3128)
    }

    /// The user and password of a proxy variable are percent-decoded once, as curl decodes them: `%25` is a `%` of
    /// the password, never the start of a second escape.
    @Test(arguments: [
        ("http://user:p%25ss@p.example:3128", "user", "p%ss"), ("http://user:50%2541@p.example", "user", "50%41"),
        ("http://a%25b:pw@p.example", "a%b", "pw"), ("socks5://us%40er:p%40ss@s.example", "us@er", "p@ss"),
    ])
    func aProxyVariablesUserAndPasswordAreDecodedOnce(value: String, user: String, password: String) throws {
        let proxy = try #require(ProxyServer(environmentValue: value))
        #expect(proxy.user == user)
        #expect(proxy.password == password)
    }

    @Test(arguments: ["", "  ", "ftp://p.example", "https://p.example", "http://:80", "http://p.example:99999"])
    func unusableEnvironmentValuesNameNoProxy(value: String) {
        #expect(ProxyServer(environmentValue: value) == nil)
    }

    @Test func noProxyPatternsMatchWholeLabelsAddressBlocksAndPorts() throws {
        let cases: [(String, String, Int, Bool)] = [
            ("example.com", "example.com", 80, true), ("example.com", "API.Example.com", 80, true),
            ("example.com", "badexample.com", 80, false), ("*.example.com", "a.example.com", 80, true),
            ("10.0.0.0/8", "10.1.2.3", 80, true), ("10.0.0.0/8", "11.1.2.3", 80, false),
            ("fd00::/8", "fd12::1", 80, true), ("fd00::/8", "fe80::1", 80, false),
            ("127.0.0.1", "127.0.0.1", 80, true), ("127.0.0.1", "127.0.0.2", 80, false),
            ("host:8080", "host", 8080, true), ("host:8080", "host", 80, false), ("*", "anything", 1, true),
        ]
        for (pattern, host, port, matches) in cases {
            let parsed = try #require(NoProxyPattern(pattern), "\(pattern)")
            #expect(parsed.matches(host: host, port: port) == matches, "\(pattern) vs \(host):\(port)")
        }
        #expect(NoProxyPattern("") == nil && NoProxyPattern("10.0.0.0/99") == nil && NoProxyPattern("a/b") == nil)
    }

    /// Entries with a `*` that macOS's proxy settings accept (`192.168.*`, `*example.com`) go direct: read as
    /// domain names they matched no host, and the hosts listed silently kept going through the proxy.
    @Test func wildcardExceptionsMatchAddressesAndNames() throws {
        let cases: [(String, String, Bool)] = [
            ("192.168.*", "192.168.1.5", true), ("192.168.*", "192.169.1.5", false),
            ("10.*.*.*", "10.200.3.4", true), ("10.*", "11.0.0.1", false), ("172.16.5.*", "172.16.5.9", true),
            ("172.16.5.*", "172.16.6.9", false), ("*example.com", "badexample.com", true),
            ("*example.com", "example.org", false), ("build-*.example.com", "BUILD-7.a.example.com", true),
            ("build-*.example.com", "build-7.example.org", false), ("*.corp.*", "git.corp.example", true),
            ("*.corp.*", "corp.example", false), ("192.168.*:8080", "192.168.0.1", true),
        ]
        for (pattern, host, matches) in cases {
            let parsed = try #require(NoProxyPattern(pattern), "\(pattern)")
            #expect(parsed.matches(host: host, port: 8080) == matches, "\(pattern) vs \(host)")
        }
        #expect(NoProxyPattern("192.168.*:8080")?.matches(host: "192.168.0.1", port: 80) == false)
        #expect(NoProxyPattern("a*/8") == nil)
        // Through Darwin's dictionary and the environment alike.
        let rules = ProxyRules(dictionary: [
            "HTTPEnable": 1, "HTTPProxy": "proxy.example", "ExceptionsList": ["192.168.*", "*.local", "*intra*"],
        ])
        #expect(rules.proxy(for: try url("http://192.168.7.7/")) == nil)
        #expect(rules.proxy(for: try url("http://my-intranet.example/")) == nil)
        #expect(rules.proxy(for: try url("http://printer.local/")) == nil)
        #expect(rules.proxy(for: try url("http://192.167.7.7/")) != nil)
        let environment = ProxyRules(environment: ["http_proxy": "p.example:3128", "no_proxy": "10.1.*, *.test"])
        #expect(environment.proxy(for: try url("http://10.1.2.3/")) == nil)
        #expect(environment.proxy(for: try url("http://10.2.2.3/")) != nil)
    }
}
