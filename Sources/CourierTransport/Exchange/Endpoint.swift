import CourierHTTP
import Foundation

/// The scheme, host and port a request connects to.
public struct Endpoint: Hashable, Sendable, CustomStringConvertible {
    /// `http` or `https`.
    public enum Scheme: String, Hashable, Sendable {
        case http
        case https

        /// The default port of the scheme.
        public var defaultPort: Int { self == .http ? 80 : 443 }
    }

    /// The scheme.
    public var scheme: Scheme
    /// The host name or IP literal, without IPv6 brackets.
    public var host: String
    /// The port.
    public var port: Int
    /// For `http+unix` and `https+unix` URLs: the path of the Unix domain socket to connect to instead of a host and
    /// port (``host`` is then `localhost`, for the `Host` header and TLS).
    public var unixSocketPath: String?

    /// Creates an endpoint.
    public init(scheme: Scheme, host: String, port: Int, unixSocketPath: String? = nil) {
        self.scheme = scheme
        self.host = host
        self.port = port
        self.unixSocketPath = unixSocketPath
    }

    /// The URL schemes for a Unix domain socket — a Courier extension for local daemons (Docker's API socket, say),
    /// spelled as async-http-client spells them: the socket's path, percent-encoded, is the URL's host
    /// (`http+unix://%2Fvar%2Frun%2Fdocker.sock/v1.43/info`).
    public static let unixSocketSchemes: [String: Scheme] = ["http+unix": .http, "https+unix": .https]

    /// The endpoint of an absolute `http` or `https` URL.
    public init(url: URL) throws(TransferError) {
        guard let schemeName = url.lowercasedScheme else {
            throw .badURL("the URL has no scheme: \(url.textWithoutCredentials())")
        }
        guard let scheme = Scheme(rawValue: schemeName) else {
            guard let socketScheme = Self.unixSocketSchemes[schemeName] else {
                throw .unsupportedURL("the scheme \(schemeName) is not supported")
            }
            guard let encoded = url.host(percentEncoded: true), !encoded.isEmpty,
                let path = encoded.removingPercentEncoding, path.hasPrefix("/")
            else {
                throw .badURL(
                    "the \(schemeName) URL \(url.textWithoutCredentials()) needs the socket's absolute path, "
                        + "percent-encoded, as its host"
                )
            }
            self.init(scheme: socketScheme, host: "localhost", port: socketScheme.defaultPort, unixSocketPath: path)
            return
        }
        guard var host = url.host, !host.isEmpty else {
            throw .badURL("the URL has no host: \(url.textWithoutCredentials())")
        }
        if host.hasPrefix("["), host.hasSuffix("]") {
            host = String(host.dropFirst().dropLast())
        }
        // `url.host` is percent-decoded: a line break in it would smuggle fields or a second request (with the
        // Proxy-Authorization written after it) to a proxy.
        let isIPv6Literal = url.host(percentEncoded: true)?.utf8.contains(UInt8(ascii: ":")) == true
        // A percent-encoded internationalized name decodes to Unicode: its A-labels go into `Host`, SNI, the
        // certificate check and the DNS lookup, never raw UTF-8.
        if !isIPv6Literal {
            guard let name = RequestHost.asciiName(host) else {
                throw .badURL("the URL's host \(host.debugDescription) is not a valid internationalized host name")
            }
            host = name
        }
        guard RequestHost.isWritable(host, isIPv6Literal: isIPv6Literal) else {
            throw .badURL("the URL's host \(host.debugDescription) is not a valid host name")
        }
        let port = url.port ?? scheme.defaultPort
        guard (1...65535).contains(port) else {
            throw .badURL("the port \(port) is out of range")
        }
        self.init(scheme: scheme, host: host, port: port)
    }

    /// Whether the host is an IPv4 or IPv6 literal (no SNI, no DNS).
    public var hostIsIPLiteral: Bool {
        hostIsIPv6Literal || host.split(separator: ".").count == 4 && host.allSatisfy { $0.isNumber || $0 == "." }
    }

    /// The value of the `Host` header: brackets around IPv6 (without a zone), the port when not the scheme's default.
    public var hostHeader: String {
        port == scheme.defaultPort ? nameInRequestHead : "\(nameInRequestHead):\(port)"
    }

    /// `host:port` with brackets around an IPv6 literal (without a zone), as a `CONNECT` request names its target.
    public var authority: String { "\(nameInRequestHead):\(port)" }

    /// The host as the request head names it. An IPv6 literal goes in brackets and without its zone
    /// (`fe80::1%eth0` is `[fe80::1]`): the zone names an interface of this machine only, and RFC 6874 §4 says an
    /// HTTP client MUST remove it from what it sends (curl does). Connecting still uses ``host``, zone included.
    private var nameInRequestHead: String {
        hostIsIPv6Literal ? "[\(RequestHost.withoutZone(host))]" : host
    }

    /// Whether the host is an IPv6 literal: it has a colon. A byte search — `String.contains` would go through
    /// Foundation's `range(of:)`, and this is asked for every request.
    private var hostIsIPv6Literal: Bool { host.utf8.contains(UInt8(ascii: ":")) }

    public var description: String {
        if let unixSocketPath { return "\(scheme.rawValue)+unix://\(unixSocketPath)" }
        return "\(scheme.rawValue)://\(hostHeader)"
    }

    /// The origin-form request target (`/path?query`) of a URL, percent-encoding kept as written.
    public static func requestTarget(of url: URL) -> String {
        let absolute = url.baseURL == nil ? url : url.absoluteURL
        var path = absolute.path(percentEncoded: true)
        if path.isEmpty { path = "/" }
        if let query = absolute.query(percentEncoded: true) {
            return "\(path)?\(query)"
        }
        return path
    }
}
