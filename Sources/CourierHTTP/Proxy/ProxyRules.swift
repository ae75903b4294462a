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
    /// Settings that are there but name a proxy Courier cannot speak (an `https://` proxy, reached over TLS, or
    /// SOCKS4), by the slot they fill, with the setting's name: a URL they were meant for fails
    /// (``unusableSetting(for:)``) instead of going direct, past the proxy.
    public var unusable: [Slot: String]

    /// Which proxy a setting is for.
    public enum Slot: Hashable, Sendable {
        /// `http` and `ws` URLs.
        case http
        /// `https` and `wss` URLs.
        case https
        /// URLs without a proxy of their own.
        case fallback
    }

    public init(
        http: ProxyServer? = nil, https: ProxyServer? = nil, fallback: ProxyServer? = nil,
        exceptions: [NoProxyPattern] = [], excludeSimpleHostnames: Bool = false, unusable: [Slot: String] = [:]
    ) {
        self.http = http
        self.https = https
        self.fallback = fallback
        self.exceptions = exceptions
        self.excludeSimpleHostnames = excludeSimpleHostnames
        self.unusable = unusable
    }

    /// Whether no proxy is configured at all (not even one Courier cannot speak).
    public var isEmpty: Bool { http == nil && https == nil && fallback == nil && unusable.isEmpty }

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
    ///
    /// The first of a slot's variables that is set decides, as in curl. One whose value names no proxy Courier
    /// speaks (`https://proxy`, `socks4://proxy`, a value that does not parse) is recorded in ``unusable``: skipping
    /// it would send what the user meant for a proxy directly.
    public init(environment: [String: String]) {
        var unusable: [Slot: String] = [:]
        func value(_ slot: Slot, _ names: String...) -> ProxyServer? {
            for name in names {
                guard let text = environment[name], !text.trimmingCharacters(in: .whitespaces).isEmpty else {
                    continue
                }
                if let server = ProxyServer(environmentValue: text) { return server }
                unusable[slot] = name
                return nil
            }
            return nil
        }
        let noProxy = environment["no_proxy"] ?? environment["NO_PROXY"] ?? ""
        let http = value(.http, "http_proxy")
        let https = value(.https, "https_proxy", "HTTPS_PROXY")
        let fallback = value(.fallback, "all_proxy", "ALL_PROXY")
        self.init(
            http: http, https: https, fallback: fallback,
            exceptions: noProxy.split(separator: ",").compactMap { NoProxyPattern(String($0)) }, unusable: unusable)
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
    /// scheme, or a scheme no proxy serves — Unix sockets, `data:`, `file:`) or when the proxy meant for it is one
    /// Courier cannot speak (``unusableSetting(for:)``).
    public func proxy(for url: URL) -> ProxyServer? {
        if case .proxy(let server) = route(for: url) { return server }
        return nil
    }

    /// The name of the setting (``unusable``) that meant `url` to go through a proxy Courier cannot speak, or `nil`:
    /// such a request must fail, not go direct.
    public func unusableSetting(for url: URL) -> String? {
        if case .unusable(let name) = route(for: url) { return name }
        return nil
    }

    private enum Route {
        case direct
        case proxy(ProxyServer)
        case unusable(String)
    }

    private func route(for url: URL) -> Route {
        guard !isEmpty, let scheme = url.lowercasedScheme, var host = url.host, !host.isEmpty else { return .direct }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let own: (server: ProxyServer?, slot: Slot)
        switch scheme {
        case "http", "ws": own = (http, .http)
        case "https", "wss": own = (https, .https)
        default: return .direct
        }
        // The scheme's own setting first, even one Courier cannot speak; then the fallback, likewise.
        let route: Route
        if let server = own.server {
            route = .proxy(server)
        } else if let name = unusable[own.slot] {
            route = .unusable(name)
        } else if let fallback {
            route = .proxy(fallback)
        } else if let name = unusable[.fallback] {
            route = .unusable(name)
        } else {
            return .direct
        }
        if excludeSimpleHostnames && !host.contains(".") && !host.contains(":") { return .direct }
        let port = url.port ?? (scheme == "https" || scheme == "wss" ? 443 : 80)
        if exceptions.contains(where: { $0.matches(host: host, port: port) }) { return .direct }
        return route
    }
}
