import CourierHTTP
import Foundation

/// A server or an area on a server, commonly called a realm, that requires authentication.
///
/// Two protection spaces are equal when their host (ignoring case), port, protocol or proxy type, realm and
/// authentication method are equal, so they can key dictionaries such as ``URLCredentialStorage/allCredentials``.
open class URLProtectionSpace: NSObject, NSCopying, @unchecked Sendable {
    private let storedHost: String
    private let storedPort: Int
    private let storedProtocol: String?
    private let storedProxyType: String?
    private let storedRealm: String?
    private let storedAuthenticationMethod: String
    private let storedServerTrust: SecTrust?
    private let storedDistinguishedNames: [Data]?

    /// Creates a protection space for a server.
    ///
    /// - Parameters:
    ///   - host: The host name of the server.
    ///   - port: The port of the server; 0 means the protocol's default port (80 for `http`, 443 for `https`),
    ///     as on Apple platforms.
    ///   - protocol: The protocol, such as ``NSURLProtectionSpaceHTTPS``.
    ///   - realm: The realm, or `nil`.
    ///   - authenticationMethod: The authentication method, such as ``NSURLAuthenticationMethodHTTPBasic``; `nil`
    ///     means ``NSURLAuthenticationMethodDefault``.
    public init(host: String, port: Int, protocol: String?, realm: String?, authenticationMethod: String?) {
        storedHost = host
        storedPort = port == 0 ? URLProtectionSpace.defaultPort(for: `protocol`) : port
        storedProtocol = `protocol`
        storedProxyType = nil
        storedRealm = realm
        storedAuthenticationMethod = authenticationMethod ?? NSURLAuthenticationMethodDefault
        storedServerTrust = nil
        storedDistinguishedNames = nil
        super.init()
    }

    /// Creates a protection space for a proxy server.
    ///
    /// - Parameters:
    ///   - host: The host name of the proxy.
    ///   - port: The port of the proxy; 0 means the proxy type's default port (80 for
    ///     ``NSURLProtectionSpaceHTTPProxy``, 1080 for ``NSURLProtectionSpaceSOCKSProxy``), as on Apple platforms.
    ///   - type: The proxy type, such as ``NSURLProtectionSpaceHTTPSProxy``.
    ///   - realm: The realm, or `nil`.
    ///   - authenticationMethod: The authentication method; `nil` means ``NSURLAuthenticationMethodDefault``.
    public init(proxyHost host: String, port: Int, type: String?, realm: String?, authenticationMethod: String?) {
        storedHost = host
        storedPort = port == 0 ? URLProtectionSpace.defaultPort(for: type) : port
        storedProtocol = nil
        storedProxyType = type
        storedRealm = realm
        storedAuthenticationMethod = authenticationMethod ?? NSURLAuthenticationMethodDefault
        storedServerTrust = nil
        storedDistinguishedNames = nil
        super.init()
    }

    /// Creates a server protection space with the server's trust or acceptable client certificate authorities, as
    /// the transport does for ``NSURLAuthenticationMethodServerTrust`` and
    /// ``NSURLAuthenticationMethodClientCertificate`` challenges.
    package init(
        host: String, port: Int, protocol: String?, realm: String?, authenticationMethod: String,
        serverTrust: SecTrust?, distinguishedNames: [Data]?
    ) {
        storedHost = host
        storedPort = port
        storedProtocol = `protocol`
        storedProxyType = nil
        storedRealm = realm
        storedAuthenticationMethod = authenticationMethod
        storedServerTrust = serverTrust
        storedDistinguishedNames = distinguishedNames
        super.init()
    }

    /// The realm of the protection space, or `nil`.
    open var realm: String? { storedRealm }

    /// Whether credentials for the protection space are sent securely: to a server over HTTPS, or with an
    /// authentication method that does not reveal the password (NTLM, Negotiate, client certificate, server trust).
    ///
    /// A proxy's credentials are secure by their method only: a proxy type names the traffic the proxy carries
    /// (``NSURLProtectionSpaceHTTPSProxy`` for a `CONNECT` tunnel), not how the proxy is reached, and Courier speaks
    /// to every proxy in the clear, so a Basic `Proxy-Authorization` is readable on the way to an `https` one too.
    open var receivesCredentialSecurely: Bool {
        let scheme = storedProxyType == nil ? storedProtocol.map(HeaderName.canonical) : nil
        if scheme == "https" || scheme == "ftps" {
            return true
        }
        return [
            NSURLAuthenticationMethodNTLM, NSURLAuthenticationMethodNegotiate,
            NSURLAuthenticationMethodClientCertificate, NSURLAuthenticationMethodServerTrust,
        ].contains(storedAuthenticationMethod)
    }

    /// The host name of the server or proxy.
    open var host: String { storedHost }

    /// The port of the server or proxy.
    open var port: Int { storedPort }

    /// The proxy type, or `nil` when the protection space is not a proxy.
    open var proxyType: String? { storedProxyType }

    /// The protocol of the protection space, or `nil` for a proxy.
    open var `protocol`: String? { storedProtocol }

    /// The authentication method of the protection space.
    open var authenticationMethod: String { storedAuthenticationMethod }

    /// Whether the protection space is a proxy.
    open override func isProxy() -> Bool {
        storedProxyType != nil
    }

    /// The distinguished names of the certificate authorities acceptable for client certificate authentication, or
    /// `nil`.
    open var distinguishedNames: [Data]? { storedDistinguishedNames }

    /// The server's trust, for server trust authentication, or `nil`.
    open var serverTrust: SecTrust? { storedServerTrust }

    /// Returns the receiver: protection spaces are immutable.
    ///
    /// - Parameter zone: Ignored.
    open func copy(with zone: NSZone? = nil) -> Any {
        self
    }

    /// Returns the receiver (see ``copy(with:)``).
    open override func copy() -> Any {
        copy(with: nil)
    }

    /// Whether another object is a protection space with the same host (ignoring case), port, protocol, proxy type,
    /// realm and authentication method.
    open override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? URLProtectionSpace else { return false }
        return HeaderName.equal(host, other.host) && port == other.port && `protocol` == other.protocol
            && proxyType == other.proxyType && realm == other.realm
            && authenticationMethod == other.authenticationMethod
    }

    /// A readable summary, like `<Courier.URLProtectionSpace: 0x…>: Host:example.com, Server:https,
    /// Auth-Scheme:NSURLAuthenticationMethodHTTPBasic, Realm:api, Port:443, Proxy:NO, Proxy-Type:(null)`.
    open override var description: String {
        super.description + ": Host:\(host), Server:\(`protocol` ?? "(null)"), Auth-Scheme:\(authenticationMethod), "
            + "Realm:\(realm ?? "(null)"), Port:\(port), Proxy:\(isProxy() ? "YES" : "NO"), "
            + "Proxy-Type:\(proxyType ?? "(null)")"
    }

    /// A hash consistent with ``isEqual(_:)``.
    open override var hash: Int {
        var hasher = Hasher()
        hasher.combine(HeaderName.canonical(host))
        hasher.combine(port)
        hasher.combine(`protocol`)
        hasher.combine(proxyType)
        hasher.combine(realm)
        hasher.combine(authenticationMethod)
        return hasher.finalize()
    }

    /// The port 0 stands for: Apple documents both initializers as using "the default port for the specified
    /// protocol" (or proxy type) when given 0. Stored so, the space equals the one a session builds for a challenge
    /// (which carries the URL's port or the scheme's default), and a credential stored for it is found. A protocol
    /// without a known default keeps 0.
    private static func defaultPort(for scheme: String?) -> Int {
        switch scheme.map(HeaderName.canonical) ?? "" {
        case "http", "ws": return 80
        case "https", "wss": return 443
        case "ftp": return 21
        case "ftps": return 990
        case "socks": return 1080
        default: return 0
        }
    }
}
