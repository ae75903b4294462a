import Foundation

extension URLSessionConfiguration {
    /// Whether `connectionProxyDictionary` asks for a proxy: one of its `…Enable` entries (Darwin's
    /// `kCFNetworkProxiesHTTPEnable`, `HTTPSEnable`, `SOCKSEnable`, `ProxyAutoConfigEnable`, …) is on.
    ///
    /// Courier cannot send through a proxy yet. Sending directly a request the app meant to send through one would
    /// leak it past the proxy, so such a session's tasks fail instead.
    var requestsProxy: Bool {
        guard let settings = connectionProxyDictionary else { return false }
        return settings.contains { key, value in
            guard let name = key.base as? String, name.hasSuffix("Enable") else { return false }
            switch value {
            case let flag as Bool: return flag
            case let number as NSNumber: return number.intValue != 0
            case let number as Int: return number != 0
            case let text as String: return (Int(text) ?? 0) != 0 || text.lowercased() == "true"
            default: return false
            }
        }
    }
}
