import Foundation

/// Which proxy, if any, a URL goes through: from `URLSessionConfiguration.connectionProxyDictionary` (Darwin's
/// keys), or — for sessions without one — from the environment, the way curl reads it. Pure: no I/O.
public struct ProxyRules: Hashable, Sendable {
    public var http: ProxyServer?
    public var https: ProxyServer?
    /// Used for any scheme without a proxy of its own (`SOCKSProxy`, `all_proxy`).
    public var fallback: ProxyServer?
    /// Hosts that go direct (see ``NoProxyPattern``).
    public var exceptions: [NoProxyPattern]
    /// Host names without a dot go direct (`ExcludeSimpleHostnames`).
    public var excludeSimpleHostnames: Bool

    public init(
        http: ProxyServer? = nil, https: ProxyServer? = nil, fallback: ProxyServer? = nil,
        exceptions: [NoProxyPattern] = [], excludeSimpleHostnames: Bool = false
    ) {
        self.http = http
        self.https = https
        self.fallback = fallback
        self.exceptions = exceptions
        self.excludeSimpleHostnames = excludeSimpleHostnames
    }

    /// Whether no proxy is configured at all.
    public var isEmpty: Bool { http == nil && https == nil && fallback == nil }

    /// The rules of a `connectionProxyDictionary`: `HTTPEnable`/`HTTPProxy`/`HTTPPort`,
    /// `HTTPSEnable`/`HTTPSProxy`/`HTTPSPort`, `SOCKSEnable`/`SOCKSProxy`/`SOCKSPort`, `ExceptionsList` and
    /// `ExcludeSimpleHostnames` (Darwin's `kCFNetworkProxies…` and `kCFProxy…` key names). An enabled entry without
    /// a host is ignored; the ports default to 80, 443 and 1080.
    public init(dictionary: [String: Any]) {
        func flag(_ key: String) -> Bool { Self.isEnabled(dictionary[key]) }
        func port(_ key: String, default fallback: Int) -> Int {
            switch dictionary[key] {
            case let number as Int: return number
            case let number as NSNumber: return number.intValue
            case let text as String: return Int(text) ?? fallback
            default: return fallback
            }
        }
        func server(_ prefix: String, _ kind: ProxyServer.Kind, defaultPort: Int) -> ProxyServer? {
            guard flag("\(prefix)Enable"), let host = dictionary["\(prefix)Proxy"] as? String, !host.isEmpty else {
                return nil
            }
            let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
            // SOCKS credentials under Darwin's stream property names, or short ones.
            let user = (dictionary["kCFStreamPropertySOCKSUser"] ?? dictionary["SOCKSUser"]) as? String
            let password = (dictionary["kCFStreamPropertySOCKSPassword"] ?? dictionary["SOCKSPassword"]) as? String
            return ProxyServer(
                kind: kind, host: bare, port: port("\(prefix)Port", default: defaultPort),
                user: kind == .socks5 ? user : nil, password: kind == .socks5 ? password : nil)
        }
        let exceptions = (dictionary["ExceptionsList"] as? [Any] ?? []).compactMap { $0 as? String }
        self.init(
            http: server("HTTP", .http, defaultPort: 80),
            https: server("HTTPS", .http, defaultPort: 443),
            fallback: server("SOCKS", .socks5, defaultPort: 1080),
            exceptions: exceptions.compactMap(NoProxyPattern.init),
            excludeSimpleHostnames: flag("ExcludeSimpleHostnames"))
    }

    /// The environment variables ``init(environment:)`` reads: a caller can look up just these instead of copying the
    /// whole environment.
    public static let environmentVariableNames = [
        "http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY",
    ]

    /// The rules curl takes from the environment: `http_proxy` (lower case only: a CGI program gets the request's
    /// `Proxy:` header as `HTTP_PROXY`), `https_proxy` / `HTTPS_PROXY`, `all_proxy` / `ALL_PROXY` for the rest, and
    /// `no_proxy` / `NO_PROXY`.
    public init(environment: [String: String]) {
        func value(_ names: String...) -> ProxyServer? {
            for name in names {
                if let text = environment[name], let server = ProxyServer(environmentValue: text) { return server }
            }
            return nil
        }
        let noProxy = environment["no_proxy"] ?? environment["NO_PROXY"] ?? ""
        self.init(
            http: value("http_proxy"),
            https: value("https_proxy", "HTTPS_PROXY"),
            fallback: value("all_proxy", "ALL_PROXY"),
            exceptions: noProxy.split(separator: ",").compactMap { NoProxyPattern(String($0)) })
    }

    /// Whether a proxy dictionary's `…Enable` value is on: a true `Bool`, a non-zero number, or a string that reads
    /// as one (`"1"`, `"true"`), as CFNetwork reads them.
    public static func isEnabled(_ value: Any?) -> Bool {
        switch value {
        case let flag as Bool: return flag
        case let number as NSNumber: return number.intValue != 0
        case let number as Int: return number != 0
        case let text as String: return (Int(text) ?? 0) != 0 || text.lowercased() == "true"
        default: return false
        }
    }

    /// The proxy for `url`, or `nil` to go direct (an exception, a simple host name when excluded, no proxy for the
    /// scheme, or a scheme no proxy serves — Unix sockets, `data:`, `file:`).
    public func proxy(for url: URL) -> ProxyServer? {
        guard !isEmpty, let scheme = url.lowercasedScheme, var host = url.host, !host.isEmpty else { return nil }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let server: ProxyServer?
        switch scheme {
        case "http", "ws": server = http ?? fallback
        case "https", "wss": server = https ?? fallback
        default: return nil
        }
        guard let server else { return nil }
        if excludeSimpleHostnames && !host.contains(".") && !host.contains(":") { return nil }
        let port = url.port ?? (scheme == "https" || scheme == "wss" ? 443 : 80)
        if exceptions.contains(where: { $0.matches(host: host, port: port) }) { return nil }
        return server
    }
}
