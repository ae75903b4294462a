/// The matching rules of RFC 6265 §5.1.3–5.1.4 that decide which cookies belong to which URL.
public enum CookieMatching {
    /// Whether a host domain-matches a cookie domain: they are equal, or the host ends with `.` followed by the
    /// domain and is not an IP address. Comparison ignores ASCII case; a leading `.` on the domain is ignored.
    ///
    /// - Parameters:
    ///   - host: The request host.
    ///   - domain: The cookie domain.
    public static func domainMatches(host: String, domain: String) -> Bool {
        let host = HeaderName.canonical(host)
        var domain = HeaderName.canonical(domain)
        if domain.hasPrefix(".") {
            domain.removeFirst()
        }
        guard !domain.isEmpty else { return false }
        if host == domain {
            return true
        }
        return host.hasSuffix("." + domain) && !isIPAddress(host)
    }

    /// Whether a request path path-matches a cookie path.
    ///
    /// - Parameters:
    ///   - requestPath: The path of the request URL (`/` when empty).
    ///   - cookiePath: The path of the cookie.
    public static func pathMatches(requestPath: String, cookiePath: String) -> Bool {
        // On bytes, as RFC 6265 §5.1.4 defines it (and run for every stored cookie a request could carry): String's
        // comparisons go by Unicode canonical equivalence and characters, which a path's octets do not.
        let request = requestPath.isEmpty ? "/".utf8 : requestPath.utf8
        let cookie = cookiePath.utf8
        guard request.starts(with: cookie) else { return false }
        if request.count == cookie.count || cookie.last == UInt8(ascii: "/") {
            return true
        }
        return request[request.index(request.startIndex, offsetBy: cookie.count)] == UInt8(ascii: "/")
    }

    /// The default cookie path for a request path: the directory of the path, or `/`.
    ///
    /// - Parameter requestPath: The path of the request URL.
    public static func defaultPath(for requestPath: String) -> String {
        guard requestPath.hasPrefix("/"), let lastSlash = requestPath.lastIndex(of: "/"),
            lastSlash != requestPath.startIndex
        else { return "/" }
        return String(requestPath[..<lastSlash])
    }

    /// Whether a URL scheme is a secure protocol for cookies (RFC 6265bis §5.7): `https` or `wss`, in any case.
    ///
    /// - Parameter scheme: The URL's scheme, if any.
    public static func isSecureScheme(_ scheme: String?) -> Bool {
        guard let scheme else { return false }
        let canonical = HeaderName.canonical(scheme)
        return canonical == "https" || canonical == "wss"
    }

    /// Whether a cookie from a non-secure origin must be ignored because it would overwrite or shadow a stored
    /// `Secure` cookie (RFC 6265bis §5.7, "Strict Secure Cookies"): the stored cookie is secure, has the same name,
    /// its domain domain-matches the new cookie's or the other way round, and the new cookie's path path-matches
    /// the stored cookie's path.
    ///
    /// - Parameters:
    ///   - name: The new cookie's name.
    ///   - domain: The new cookie's domain (a leading `.` is ignored).
    ///   - path: The new cookie's path.
    ///   - storedName: A stored cookie's name.
    ///   - storedDomain: The stored cookie's domain.
    ///   - storedPath: The stored cookie's path.
    ///   - storedIsSecure: Whether the stored cookie is `Secure`.
    public static func shadowsSecureCookie(
        name: String,
        domain: String,
        path: String,
        storedName: String,
        storedDomain: String,
        storedPath: String,
        storedIsSecure: Bool
    ) -> Bool {
        guard storedIsSecure, name == storedName else { return false }
        let newHost = domain.hasPrefix(".") ? String(domain.dropFirst()) : domain
        let storedHost = storedDomain.hasPrefix(".") ? String(storedDomain.dropFirst()) : storedDomain
        let related =
            domainMatches(host: storedHost, domain: newHost) || domainMatches(host: newHost, domain: storedHost)
        return related && pathMatches(requestPath: path, cookiePath: storedPath)
    }

    /// Whether a host is an IPv4 or IPv6 address literal rather than a domain name.
    ///
    /// - Parameter host: The host, with or without the brackets of an IPv6 literal.
    public static func isIPAddress(_ host: String) -> Bool {
        // Byte by byte, without splitting (it runs on every cookie lookup): `String.contains(String)` would go
        // through Foundation's NSString search, and splitting into substrings costs characters and allocations.
        if host.utf8.contains(UInt8(ascii: ":")) {
            return true
        }
        // IPv4: four dot-separated parts of one to three digits, each at most 255.
        var dots = 0
        var digits = 0
        var value = 0
        for byte in host.utf8 {
            if byte == UInt8(ascii: ".") {
                guard digits > 0 else { return false }
                dots += 1
                digits = 0
                value = 0
                continue
            }
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return false }
            digits += 1
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
            guard digits <= 3, value <= 255 else { return false }
        }
        return dots == 3 && digits > 0
    }
}
