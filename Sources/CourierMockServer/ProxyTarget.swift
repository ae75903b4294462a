/// Where a proxied request goes: the host and port of a `CONNECT` authority (`host:port`, `[::1]:port`) or of an
/// absolute-form `http` URI, and for the latter the origin-form target to send on.
struct ProxyTarget: Equatable {
    /// The host, without IPv6 brackets.
    var host: String
    var port: Int
    /// The path and query for the origin (`/` when the URI has none); empty for `CONNECT`.
    var originForm: String

    /// The hosts the proxy connects to; anything else is refused, so that tests can never make the proxy reach
    /// beyond this machine.
    private static let loopbackHosts: Set<String> = ["127.0.0.1", "::1", "localhost"]

    var isLoopback: Bool {
        Self.loopbackHosts.contains(host.lowercased())
    }

    /// A host and port given apart, as in a SOCKS request; `host` carries no IPv6 brackets.
    init(host: String, port: Int) {
        self.host = host
        self.port = port
        self.originForm = ""
    }

    /// Parses a `CONNECT` request-target, which must name a port.
    init?(connectAuthority: String) {
        guard let (host, port) = Self.parseAuthority(Substring(connectAuthority), defaultPort: nil) else {
            return nil
        }
        self.host = host
        self.port = port
        self.originForm = ""
    }

    /// Parses an absolute-form request-target; only `http` is accepted (clients tunnel `https` with `CONNECT`).
    init?(absoluteURI: String) {
        let scheme = "http://"
        guard absoluteURI.count > scheme.count, absoluteURI.prefix(scheme.count).lowercased() == scheme else {
            return nil
        }
        let rest = absoluteURI.dropFirst(scheme.count)
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        guard let (host, port) = Self.parseAuthority(rest[..<authorityEnd], defaultPort: 80) else { return nil }
        var originForm = String(rest[authorityEnd...])
        if let fragment = originForm.firstIndex(of: "#") {
            originForm = String(originForm[..<fragment])
        }
        if !originForm.hasPrefix("/") {
            originForm = "/" + originForm
        }
        self.host = host
        self.port = port
        self.originForm = originForm
    }

    /// `host[:port]` or `[v6][:port]`; an unbracketed IPv6 address (`::1:443`) splits at its last colon and then
    /// needs a port. User information (`user@host`) is refused rather than interpreted.
    private static func parseAuthority(_ authority: Substring, defaultPort: Int?) -> (String, Int)? {
        guard !authority.isEmpty, !authority.contains("@"),
            !authority.contains(where: { $0.isWhitespace || $0.isNewline })
        else { return nil }
        let host: Substring
        let portText: Substring?
        if authority.first == "[" {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if after.isEmpty {
                portText = nil
            } else {
                guard after.first == ":" else { return nil }
                portText = after.dropFirst()
            }
        } else if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        } else {
            host = authority
            portText = nil
        }
        guard !host.isEmpty else { return nil }
        let port: Int
        if let portText {
            guard (1...5).contains(portText.count), portText.allSatisfy({ $0.isASCII && $0.isNumber }),
                let value = Int(portText), (1...65_535).contains(value)
            else { return nil }
            port = value
        } else {
            guard let defaultPort else { return nil }
            port = defaultPort
        }
        return (String(host), port)
    }
}
