import Foundation

/// A cookie parsed from a `Set-Cookie` header value and checked against the URL that sent it (RFC 6265 §5.2–5.3).
public struct SetCookie: Hashable, Sendable {
    /// The most bytes a cookie's name and value may have together (RFC 6265bis §5.6).
    public static let maximumNameValueBytes = 4096
    /// The most bytes an attribute value may have; longer attributes are ignored (RFC 6265bis §5.6).
    public static let maximumAttributeValueBytes = 1024

    /// The cookie name.
    public var name: String
    /// The cookie value.
    public var value: String
    /// The cookie domain, lowercased and without a leading dot.
    public var domain: String
    /// Whether the cookie is sent only to ``domain`` itself (no `Domain` attribute) rather than to its subdomains too.
    public var isHostOnly: Bool
    /// The cookie path.
    public var path: String
    /// The expiry date from `Max-Age` (preferred) or `Expires`, or `nil` for a session cookie.
    public var expires: Date?
    /// Whether the value-less `Secure` attribute was present (`Secure=1` does not count, as on Darwin).
    public var isSecure: Bool
    /// Whether the value-less `HttpOnly` attribute was present.
    public var isHTTPOnly: Bool
    /// The lowercased `SameSite` attribute (`"lax"`, `"strict"` or `"none"`), or `nil` when absent or unknown.
    public var sameSite: String?
    /// The `Comment` attribute's value, or `nil` when absent or without a value.
    public var comment: String?
    /// The `CommentURL` attribute's value, or `nil` when absent or without a value.
    public var commentURL: String?
    /// Whether the value-less `Discard` attribute was present (the cookie ends with the session).
    public var isDiscard = false

    /// Creates a parsed cookie from its parts.
    public init(
        name: String, value: String, domain: String, isHostOnly: Bool, path: String, expires: Date? = nil,
        isSecure: Bool = false, isHTTPOnly: Bool = false, sameSite: String? = nil
    ) {
        self.name = name
        self.value = value
        self.domain = domain
        self.isHostOnly = isHostOnly
        self.path = path
        self.expires = expires
        self.isSecure = isSecure
        self.isHTTPOnly = isHTTPOnly
        self.sameSite = sameSite
    }

    /// Parses a single `Set-Cookie` header value sent by `host` for a request to `requestPath`.
    ///
    /// The cookie is rejected (`nil`) when it has no `=`, an empty name, control characters, a name and value longer
    /// than ``maximumNameValueBytes``, a `Domain` attribute that the host does not domain-match, or a `__Secure-` or
    /// `__Host-` name whose attributes break the prefix's rules (see ``satisfiesNamePrefix(_:pathAttribute:)``). A
    /// `Domain` that is a public suffix (`com`, `co.uk`, `github.io`; see ``PublicSuffixList``) is rejected unless it
    /// is the host itself, which then gets a host-only cookie (RFC 6265bis §5.7).
    ///
    /// - Parameters:
    ///   - headerValue: One `Set-Cookie` value.
    ///   - host: The host of the URL that sent the cookie.
    ///   - requestPath: The path of that URL.
    ///   - now: The current date, used for `Max-Age`.
    public static func parse(
        _ headerValue: String, host: String, requestPath: String, now: Date,
        publicSuffixes: PublicSuffixList = .shared
    ) -> SetCookie? {
        let host = HeaderName.canonical(host)
        guard !host.isEmpty else { return nil }
        var segments = headerValue.split(separator: ";", omittingEmptySubsequences: false)
        let pair = segments.removeFirst()
        guard let equals = pair.firstIndex(of: "=") else { return nil }
        let name = HeaderParameters.trim(pair[..<equals])
        let value = HeaderParameters.trim(pair[pair.index(after: equals)...])
        guard !name.isEmpty, name.utf8.count + value.utf8.count <= maximumNameValueBytes,
            !containsControlCharacter(name), !containsControlCharacter(value)
        else { return nil }

        let attributes = Attributes(segments: segments, now: now)
        var cookie = SetCookie(
            name: name, value: value, domain: host, isHostOnly: true,
            path: attributes.path ?? CookieMatching.defaultPath(for: requestPath),
            expires: attributes.maxAgeExpiry ?? attributes.expires, isSecure: attributes.isSecure,
            isHTTPOnly: attributes.isHTTPOnly, sameSite: attributes.sameSite)
        cookie.comment = attributes.comment
        cookie.commentURL = attributes.commentURL
        cookie.isDiscard = attributes.isDiscard
        if let domain = attributes.domain, !CookieMatching.isIPAddress(host), publicSuffixes.isPublicSuffix(domain) {
            // A cookie for a whole registry: refused, unless the host is that suffix itself (then only for it).
            guard domain == host else { return nil }
        } else if let domain = attributes.domain, domain != host {
            guard CookieMatching.domainMatches(host: host, domain: domain), domain.contains(".") else { return nil }
            cookie.domain = domain
            cookie.isHostOnly = false
        } else if attributes.domain != nil, !CookieMatching.isIPAddress(host) {
            cookie.isHostOnly = false
        }
        guard satisfiesNamePrefix(cookie, pathAttribute: attributes.path) else { return nil }
        return cookie
    }

    /// Whether a cookie keeps the promise of its name's prefix (RFC 6265bis §4.1.3, and §5.7's storage steps; the
    /// prefixes match case-insensitively): a `__Secure-` cookie must be `Secure`; a `__Host-` cookie must be
    /// `Secure`, host-only (no `Domain` attribute) and set with `Path=/`. Servers rely on these names to know that a
    /// cookie was neither set over plain HTTP nor by a sibling subdomain; a cookie that breaks its prefix is ignored.
    /// (That a `Secure` cookie comes from a secure origin is the storage's check, which knows the scheme.)
    ///
    /// - Parameters:
    ///   - cookie: The parsed cookie.
    ///   - pathAttribute: The value of its `Path` attribute, or `nil` when it had none (or an invalid one).
    public static func satisfiesNamePrefix(_ cookie: SetCookie, pathAttribute: String?) -> Bool {
        // Most names start with neither prefix: look at the first byte before lowercasing anything.
        guard cookie.name.utf8.first == UInt8(ascii: "_") else { return true }
        let name = HeaderName.canonical(String(cookie.name.prefix(9)))
        if name.hasPrefix("__secure-") { return cookie.isSecure }
        if name.hasPrefix("__host-") { return cookie.isSecure && cookie.isHostOnly && pathAttribute == "/" }
        return true
    }

    /// Splits a header value that holds several `Set-Cookie` values joined with commas, as `allHeaderFields` on
    /// Darwin and FoundationNetworking hands them out.
    ///
    /// A comma separates two cookies only when what follows it is optional whitespace, a token, optional whitespace
    /// and `=` (FoundationNetworking's rule): the commas inside `Expires` dates (`Wed, 09 Jun 2021 …`) and inside
    /// values such as `Comment=a, b@c=d` are kept.
    ///
    /// - Parameter combined: The combined header value.
    /// - Returns: The individual `Set-Cookie` values, trimmed of whitespace and line breaks, without empty ones.
    public static func split(combined: String) -> [String] {
        let bytes = Array(combined.utf8)
        var results: [String] = []
        var start = 0
        for index in bytes.indices where bytes[index] == UInt8(ascii: ",") && startsNewCookie(bytes, at: index + 1) {
            results.append(String(decoding: bytes[start..<index], as: UTF8.self))
            start = index + 1
        }
        results.append(String(decoding: bytes[start...], as: UTF8.self))
        return results.map(trimmingLineWhitespace).filter { !$0.isEmpty }
    }

    /// Whether `bytes[index...]` is `WSP* token WSP* "="`.
    private static func startsNewCookie(_ bytes: [UInt8], at index: Int) -> Bool {
        var cursor = index
        while cursor < bytes.count, isLineWhitespace(bytes[cursor]) { cursor += 1 }
        let tokenStart = cursor
        while cursor < bytes.count, Token.isTokenByte(bytes[cursor]) { cursor += 1 }
        guard cursor > tokenStart else { return false }
        while cursor < bytes.count, isLineWhitespace(bytes[cursor]) { cursor += 1 }
        return cursor < bytes.count && bytes[cursor] == UInt8(ascii: "=")
    }

    private static func isLineWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    private static func trimmingLineWhitespace(_ value: String) -> String {
        let bytes = value.utf8
        guard let first = bytes.firstIndex(where: { !isLineWhitespace($0) }),
            let last = bytes.lastIndex(where: { !isLineWhitespace($0) })
        else { return "" }
        return String(decoding: bytes[first...last], as: UTF8.self)
    }

    private static func containsControlCharacter(_ value: String) -> Bool {
        value.unicodeScalars.contains { ($0.value < 0x20 && $0.value != 0x09) || $0.value == 0x7F }
    }
}

/// The attributes of a `Set-Cookie` value; later occurrences override earlier ones (RFC 6265 §5.3 step 5).
private struct Attributes {
    var expires: Date?
    var maxAgeExpiry: Date?
    var domain: String?
    var path: String?
    var isSecure = false
    var isHTTPOnly = false
    var isDiscard = false
    var sameSite: String?
    var comment: String?
    var commentURL: String?

    init(segments: [Substring], now: Date) {
        for segment in segments {
            guard let equals = segment.firstIndex(of: "=") else {
                applyFlag(HeaderName.canonical(HeaderParameters.trim(segment)))
                continue
            }
            let name = HeaderName.canonical(HeaderParameters.trim(segment[..<equals]))
            let value = HeaderParameters.trim(segment[segment.index(after: equals)...])
            guard value.utf8.count <= SetCookie.maximumAttributeValueBytes else { continue }
            apply(name: name, value: value, now: now)
        }
    }

    /// A value-less attribute. As on Darwin and FoundationNetworking, only these set `Secure`, `HttpOnly` and
    /// `Discard`: `Secure=1` is not the `Secure` flag.
    private mutating func applyFlag(_ name: String) {
        switch name {
        case "secure": isSecure = true
        case "httponly": isHTTPOnly = true
        case "discard": isDiscard = true
        default: break
        }
    }

    /// An attribute with a value (possibly empty); an attribute without a name is ignored.
    private mutating func apply(name: String, value: String, now: Date) {
        switch name {
        case "comment":
            comment = value
        case "commenturl":
            commentURL = value
        case "expires":
            if let date = CookieDate.parse(value) {
                expires = date
            }
        case "max-age":
            if let seconds = Self.parseMaxAge(value) {
                maxAgeExpiry = seconds <= 0 ? Date.distantPast : now.addingTimeInterval(TimeInterval(seconds))
            }
        case "domain":
            var domain = HeaderName.canonical(value)
            if domain.hasPrefix(".") {
                domain.removeFirst()
            }
            if !domain.isEmpty {
                domain = domain.hasSuffix(".") ? String(domain.dropLast()) : domain
                self.domain = domain
            }
        case "path":
            path = value.hasPrefix("/") ? value : nil
        case "samesite":
            let policy = HeaderName.canonical(value)
            sameSite = ["lax", "strict", "none"].contains(policy) ? policy : nil
        default:
            break
        }
    }

    /// `Max-Age` is an optional `-` then digits; huge values saturate instead of overflowing.
    private static func parseMaxAge(_ value: String) -> Int64? {
        let negative = value.hasPrefix("-")
        let digits = negative ? value.dropFirst() : Substring(value)
        guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        let magnitude = Int64(digits) ?? Int64.max
        return negative ? -magnitude : magnitude
    }
}
