import CourierHTTP
import Foundation

/// An HTTP cookie: an immutable name–value pair with the attributes that decide where and until when it is sent.
///
/// Create cookies from a properties dictionary with ``init(properties:)``, or from a response's `Set-Cookie` header
/// fields with ``cookies(withResponseHeaderFields:for:)``.
open class HTTPCookie: NSObject, @unchecked Sendable {
    private let storedName: String
    private let storedValue: String
    private let storedDomain: String
    private let storedPath: String
    private let storedVersion: Int
    private let storedExpiresDate: Date?
    private let storedIsSessionOnly: Bool
    private let storedIsSecure: Bool
    private let storedIsHTTPOnly: Bool
    private let storedComment: String?
    private let storedCommentURL: URL?
    private let storedPortList: [NSNumber]?
    private let storedSameSitePolicy: HTTPCookieStringPolicy?
    private let storedProperties: [HTTPCookiePropertyKey: Any]

    /// Creates a cookie from a dictionary of properties.
    ///
    /// ``HTTPCookiePropertyKey/name``, ``HTTPCookiePropertyKey/value`` and ``HTTPCookiePropertyKey/path`` are
    /// required, as is either ``HTTPCookiePropertyKey/domain`` or ``HTTPCookiePropertyKey/originURL`` (whose host then
    /// becomes a host-only domain). ``HTTPCookiePropertyKey/maximumAge`` is honoured only for version 1 cookies, as
    /// Apple documents. A version 0 cookie with ``HTTPCookiePropertyKey/discard`` set is session-only and has no
    /// ``expiresDate``.
    ///
    /// Courier also returns `nil` when the name is empty or contains `=`, `;` or control characters, or the value
    /// contains `;` or control characters, so that a cookie can never inject text into a `Cookie` header.
    ///
    /// - Parameter properties: The cookie's properties.
    public init?(properties: [HTTPCookiePropertyKey: Any]) {
        guard let name = Self.string(properties[.name]), let value = Self.string(properties[.value]),
            let path = Self.string(properties[.path]), Self.isValidName(name), Self.isValidValue(value)
        else { return nil }
        let domain: String
        if let explicit = Self.string(properties[.domain]), !explicit.isEmpty {
            domain = HeaderName.canonical(explicit)
        } else if let origin = Self.url(properties[.originURL]), let host = origin.host, !host.isEmpty {
            domain = HeaderName.canonical(host)
        } else {
            return nil
        }
        let version = Self.integer(properties[.version]) ?? 0
        var expires = Self.date(properties[.expires])
        let maximumAge = version >= 1 ? Self.integer(properties[.maximumAge]) : nil
        if let maximumAge {
            expires = Date(timeIntervalSinceNow: TimeInterval(maximumAge))
        }
        let discard = Self.flag(properties[.discard])
        if discard && version == 0 {
            // A Netscape cookie marked Discard ends with the session: it has no expiry date (Darwin and
            // FoundationNetworking agree).
            expires = nil
        }

        storedName = name
        storedValue = value
        storedDomain = domain
        storedPath = path
        storedVersion = version
        storedExpiresDate = expires
        storedIsSessionOnly = discard || expires == nil
        storedIsSecure = Self.flag(properties[.secure])
        storedIsHTTPOnly = Self.flag(properties[.httpOnly])
        storedComment = Self.string(properties[.comment])
        storedCommentURL = Self.url(properties[.commentURL])
        storedPortList = Self.ports(properties[.port], version: version)
        storedSameSitePolicy = Self.sameSite(properties[.sameSitePolicy])
        storedProperties = Self.normalizedProperties(
            name: name, value: value, domain: domain, path: path, version: version, expires: expires,
            original: properties)
        super.init()
    }

    /// The cookie's properties, in the form accepted by ``init(properties:)``.
    open var properties: [HTTPCookiePropertyKey: Any]? { storedProperties }

    /// The cookie's version: 0 for Netscape-style cookies (the norm), 1 for RFC 2965 cookies.
    open var version: Int { storedVersion }

    /// The cookie's name.
    open var name: String { storedName }

    /// The cookie's value.
    open var value: String { storedValue }

    /// The cookie's expiry date, or `nil` when it expires at the end of the session.
    open var expiresDate: Date? { storedExpiresDate }

    /// Whether the cookie should be discarded at the end of the session.
    open var isSessionOnly: Bool { storedIsSessionOnly }

    /// The cookie's domain, lowercased. A leading `.` means the cookie is also sent to subdomains; without it the
    /// cookie is sent only to that exact host.
    open var domain: String { storedDomain }

    /// The cookie's path.
    open var path: String { storedPath }

    /// Whether the cookie is sent only over secure channels (HTTPS).
    open var isSecure: Bool { storedIsSecure }

    /// Whether the cookie should be sent only in HTTP requests and hidden from scripts.
    open var isHTTPOnly: Bool { storedIsHTTPOnly }

    /// The cookie's comment, or `nil`.
    open var comment: String? { storedComment }

    /// The cookie's comment URL, or `nil`.
    open var commentURL: URL? { storedCommentURL }

    /// The ports the cookie may be sent to, or `nil` for any port.
    open var portList: [NSNumber]? { storedPortList }

    /// The cookie's same-site policy, or `nil` when it has none.
    open var sameSitePolicy: HTTPCookieStringPolicy? { storedSameSitePolicy }

    /// Whether two cookies have the same name, value, domain, path and attributes.
    open override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? HTTPCookie else { return false }
        return other === self
            || (name == other.name && value == other.value && domain == other.domain && path == other.path
                && version == other.version && expiresDate == other.expiresDate && isSecure == other.isSecure
                && isHTTPOnly == other.isHTTPOnly && isSessionOnly == other.isSessionOnly
                && sameSitePolicy == other.sameSitePolicy && comment == other.comment)
    }

    /// A hash consistent with ``isEqual(_:)``.
    open override var hash: Int {
        var hasher = Hasher()
        hasher.combine(name)
        hasher.combine(domain)
        hasher.combine(path)
        return hasher.finalize()
    }

    /// A description listing the cookie's main properties.
    open override var description: String {
        "<HTTPCookie \(name)=\(value); domain=\(domain); path=\(path); secure=\(isSecure); httpOnly=\(isHTTPOnly)>"
    }

    /// Returns a dictionary with a `Cookie` header field carrying the given cookies.
    ///
    /// - Parameter cookies: The cookies to send, in order.
    /// - Returns: `["Cookie": "name1=value1; name2=value2"]`, or an empty dictionary when `cookies` is empty.
    open class func requestHeaderFields(with cookies: [HTTPCookie]) -> [String: String] {
        cookieHeaderFields(with: cookies)
    }

    /// Returns the cookies set by a response's `Set-Cookie` header fields.
    ///
    /// Several cookies may share one field, joined with commas, as `allHeaderFields` hands them out: a comma starts a
    /// new cookie only when a token and `=` follow it, so the commas of `Expires` dates are kept. `Expires` accepts
    /// RFC 1123, RFC 850 and asctime dates. `Secure`, `HttpOnly` and `Discard` count only without a value
    /// (`Secure=1` is not secure); `Comment` and `CommentURL` become ``comment`` and ``commentURL``; attributes
    /// without a name are ignored. Each cookie is parsed by the rules of RFC 6265:
    /// a cookie without `=`, with an empty name, with a name and value over 4096 bytes, or whose `Domain` attribute
    /// the URL's host does not domain-match (a cookie for another site) is ignored. Without a `Path` attribute the
    /// path defaults to the directory of the URL's path. `Max-Age` takes precedence over `Expires`.
    ///
    /// - Parameters:
    ///   - headerFields: The response's header fields; the `Set-Cookie` name is matched case-insensitively.
    ///   - URL: The URL of the response that set the cookies.
    /// - Returns: The accepted cookies, in order.
    open class func cookies(withResponseHeaderFields headerFields: [String: String], for URL: URL) -> [HTTPCookie] {
        parseCookies(withResponseHeaderFields: headerFields, for: URL)
    }

    /// Whether the cookie is sent only to the exact host named by ``domain``.
    package var isHostOnly: Bool { !storedDomain.hasPrefix(".") }

    /// Whether the cookie has expired at the given date.
    package func isExpired(at date: Date) -> Bool {
        storedExpiresDate.map { $0 <= date } ?? false
    }

    // MARK: - Property decoding

    private static func string(_ value: Any?) -> String? {
        if let string = value as? String { return string }
        if let substring = value as? Substring { return String(substring) }
        return nil
    }

    private static func url(_ value: Any?) -> URL? {
        if let url = value as? URL { return url }
        return string(value).flatMap(URL.init(string:))
    }

    private static func integer(_ value: Any?) -> Int? {
        if let integer = value as? Int { return integer }
        return string(value).flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
    }

    private static func flag(_ value: Any?) -> Bool {
        if let flag = value as? Bool { return flag }
        guard let text = string(value)?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return false }
        return !["false", "no", "0"].contains(HeaderName.canonical(text))
    }

    private static func date(_ value: Any?) -> Date? {
        if let date = value as? Date { return date }
        return string(value).flatMap(CookieDate.parse)
    }

    private static func ports(_ value: Any?, version: Int) -> [NSNumber]? {
        guard let text = string(value) else { return nil }
        let ports = text.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !ports.isEmpty else { return nil }
        return (version >= 1 ? ports : [ports[0]]).map { NSNumber(value: $0) }
    }

    private static func sameSite(_ value: Any?) -> HTTPCookieStringPolicy? {
        let raw = (value as? HTTPCookieStringPolicy)?.rawValue ?? string(value)
        switch raw.map(HeaderName.canonical) {
        case "lax": return .sameSiteLax
        case "strict": return .sameSiteStrict
        default: return nil
        }
    }

    private static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && !name.unicodeScalars.contains { $0 == "=" || $0 == ";" || isControl($0) }
    }

    private static func isValidValue(_ value: String) -> Bool {
        !value.unicodeScalars.contains { $0 == ";" || isControl($0) }
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || scalar.value == 0x7F
    }

    private static func normalizedProperties(
        name: String, value: String, domain: String, path: String, version: Int, expires: Date?,
        original: [HTTPCookiePropertyKey: Any]
    ) -> [HTTPCookiePropertyKey: Any] {
        var result = original
        result[.name] = name
        result[.value] = value
        result[.domain] = domain
        result[.path] = path
        result[.version] = String(version)
        result[.expires] = expires
        return result
    }
}
