import CourierHTTP
import Foundation

extension URLSessionConfiguration {
    /// The first proxy setting of `connectionProxyDictionary` that Courier cannot honour: automatic configuration
    /// (`ProxyAutoConfigEnable`, a PAC file) and discovery (`ProxyAutoDiscoveryEnable`, WPAD). Sending a request
    /// directly that the app meant to send through a proxy would leak it past the proxy, so such a session's tasks
    /// fail instead. (HTTP, HTTPS and SOCKS proxies are honoured, see `ProxyRules`.)
    var unsupportedProxySetting: String? {
        guard let settings = connectionProxyDictionary else { return nil }
        return ["ProxyAutoConfigEnable", "ProxyAutoDiscoveryEnable"].first { name in
            settings.contains { key, value in key.base as? String == name && ProxyRules.isEnabled(value) }
        }
    }
}
