import Foundation

extension URLSessionConfiguration {
    /// The first proxy setting of `connectionProxyDictionary` that Courier cannot honour: automatic configuration
    /// (`ProxyAutoConfigEnable`, a PAC file) and discovery (`ProxyAutoDiscoveryEnable`, WPAD). Sending a request
    /// directly that the app meant to send through a proxy would leak it past the proxy, so such a session's tasks
    /// fail instead. (HTTP and HTTPS proxies are honoured; SOCKS fails per request, see `TransportRequestBuilder`.)
    var unsupportedProxySetting: String? {
        guard let settings = connectionProxyDictionary else { return nil }
        for name in ["ProxyAutoConfigEnable", "ProxyAutoDiscoveryEnable"] {
            let enabled = settings.contains { key, value in
                guard key.base as? String == name else { return false }
                switch value {
                case let flag as Bool: return flag
                case let number as NSNumber: return number.intValue != 0
                case let number as Int: return number != 0
                case let text as String: return (Int(text) ?? 0) != 0 || text.lowercased() == "true"
                default: return false
                }
            }
            if enabled { return name }
        }
        return nil
    }
}
