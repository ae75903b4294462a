import Foundation

/// A proxy a request goes through.
public struct ProxyServer: Hashable, Sendable, CustomStringConvertible {
    /// How the proxy is spoken to.
    public enum Kind: String, Hashable, Sendable {
        /// An HTTP proxy: `http` requests in absolute form, `https` ones through a `CONNECT` tunnel.
        case http
        /// A SOCKS5 proxy (RFC 1928).
        case socks5
    }

    public var kind: Kind
    /// The proxy's host name or IP literal (no brackets).
    public var host: String
    public var port: Int
    /// Credentials given with the proxy (`http://user:password@proxy:3128` in an environment variable): sent ahead,
    /// as curl sends them.
    public var user: String?
    public var password: String?

    public init(kind: Kind, host: String, port: Int, user: String? = nil, password: String? = nil) {
        self.kind = kind
        self.host = host
        self.port = port
        self.user = user
        self.password = password
    }

    /// `host:port`, with brackets around an IPv6 literal.
    public var authority: String {
        host.utf8.contains(UInt8(ascii: ":")) ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    public var description: String { "\(kind.rawValue) proxy \(authority)" }

    /// The proxy a `http_proxy`-style value names (`host`, `host:port`, `http://user:pass@host:port/`,
    /// `socks5://host:port`, `socks5h://…`), or `nil` when it names none. Without a port it is 1080, for HTTP proxies
    /// too: libcurl's default for every proxy but an `https://` one (`CURLOPT_PROXYPORT`), so the same variable
    /// reaches the same proxy as under FoundationNetworking (3128 is common, but it must be said).
    public init?(environmentValue value: String) {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty else { return nil }
        let withScheme = trimmed.contains("://") ? trimmed : "http://\(trimmed)"
        guard let components = URLComponents(string: withScheme), let scheme = components.scheme?.lowercased(),
            var host = components.host, !host.isEmpty
        else { return nil }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let kind: Kind
        switch scheme {
        case "http": kind = .http
        case "socks5", "socks5h": kind = .socks5
        default: return nil  // https:// proxies (TLS to the proxy) and SOCKS4 are not spoken
        }
        let port = components.port ?? 1080
        guard (1...65535).contains(port) else { return nil }
        // `URLComponents.user` and `.password` are percent-decoded already, as curl decodes them once: decoding
        // again made a password written `p%25ss` (`p%ss`) nil, and the proxy got Basic with an empty password.
        self.init(kind: kind, host: host, port: port, user: components.user, password: components.password)
    }
}
