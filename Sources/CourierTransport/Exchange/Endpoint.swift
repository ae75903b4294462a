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

    /// Creates an endpoint.
    public init(scheme: Scheme, host: String, port: Int) {
        self.scheme = scheme
        self.host = host
        self.port = port
    }

    /// The endpoint of an absolute `http` or `https` URL.
    public init(url: URL) throws(TransferError) {
        guard let schemeName = url.scheme?.lowercased() else {
            throw .badURL("the URL has no scheme: \(url.absoluteString)")
        }
        guard let scheme = Scheme(rawValue: schemeName) else {
            throw .unsupportedURL("the scheme \(schemeName) is not supported")
        }
        guard var host = url.host, !host.isEmpty else {
            throw .badURL("the URL has no host: \(url.absoluteString)")
        }
        if host.hasPrefix("["), host.hasSuffix("]") {
            host = String(host.dropFirst().dropLast())
        }
        let port = url.port ?? scheme.defaultPort
        guard (1...65535).contains(port) else {
            throw .badURL("the port \(port) is out of range")
        }
        self.init(scheme: scheme, host: host, port: port)
    }

    /// Whether the host is an IPv4 or IPv6 literal (no SNI, no DNS).
    public var hostIsIPLiteral: Bool {
        host.contains(":") || host.split(separator: ".").count == 4 && host.allSatisfy { $0.isNumber || $0 == "." }
    }

    /// The value of the `Host` header: brackets around IPv6, the port when not the scheme's default.
    public var hostHeader: String {
        let name = host.contains(":") ? "[\(host)]" : host
        return port == scheme.defaultPort ? name : "\(name):\(port)"
    }

    public var description: String { "\(scheme.rawValue)://\(hostHeader)" }

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
