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
    /// Whether the `Secure` attribute was present.
    public var isSecure: Bool
    /// Whether the `HttpOnly` attribute was present.
    public var isHTTPOnly: Bool
    /// The lowercased `SameSite` attribute (`"lax"`, `"strict"` or `"none"`), or `nil` when absent or unknown.
    public var sameSite: String?

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
    /// than ``maximumNameValueBytes``, or a `Domain` attribute that the host does not domain-match. A `Domain` that
    /// names a single label (such as `com`) other than the host itself is also rejected, as a minimal guard in place of
    /// a public suffix list.
    ///
    /// - Parameters:
    ///   - headerValue: One `Set-Cookie` value.
    ///   - host: The host of the URL that sent the cookie.
    ///   - requestPath: The path of that URL.
    ///   - now: The current date, used for `Max-Age`.
    public static func parse(_ headerValue: String, host: String, requestPath: String, now: Date) -> SetCookie? {
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
        if let domain = attributes.domain, domain != host {
            guard CookieMatching.domainMatches(host: host, domain: domain), domain.contains(".") else { return nil }
            cookie.domain = domain
            cookie.isHostOnly = false
        } else if attributes.domain != nil, !CookieMatching.isIPAddress(host) {
            cookie.isHostOnly = false
        }
        return cookie
    }

    /// Splits a header value that holds several `Set-Cookie` values joined with commas.
    ///
    /// A comma separates two cookies only when what follows it starts with `name=`; the commas inside `Expires`
    /// dates (`Wed, 09 Jun 2021 …`) are kept.
    ///
    /// - Parameter combined: The combined header value.
    /// - Returns: The individual `Set-Cookie` values, trimmed, without empty ones.
    public static func split(combined: String) -> [String] {
        var results: [String] = []
        var current = ""
        var index = combined.startIndex
        while index < combined.endIndex {
            let character = combined[index]
            let next = combined.index(after: index)
            if character == ",", startsNewCookie(combined[next...]) {
                results.append(current)
                current = ""
            } else {
                current.append(character)
            }
            index = next
        }
        results.append(current)
        return results.map(HeaderParameters.trim).filter { !$0.isEmpty }
    }

    private static func startsNewCookie(_ rest: Substring) -> Bool {
        let trimmed = rest.drop { $0 == " " || $0 == "\t" }
        guard let end = trimmed.firstIndex(where: { $0 == "=" || $0 == ";" || $0 == "," }), trimmed[end] == "="
        else { return false }
        let name = trimmed[..<end]
        return !name.isEmpty && !name.contains(" ")
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
    var sameSite: String?

    init(segments: [Substring], now: Date) {
        for segment in segments {
            let name: String
            let value: String
            if let equals = segment.firstIndex(of: "=") {
                name = HeaderName.canonical(HeaderParameters.trim(segment[..<equals]))
                value = HeaderParameters.trim(segment[segment.index(after: equals)...])
            } else {
                name = HeaderName.canonical(HeaderParameters.trim(segment))
                value = ""
            }
            guard value.utf8.count <= SetCookie.maximumAttributeValueBytes else { continue }
            apply(name: name, value: value, now: now)
        }
    }

    private mutating func apply(name: String, value: String, now: Date) {
        switch name {
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
        case "secure":
            isSecure = true
        case "httponly":
            isHTTPOnly = true
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
