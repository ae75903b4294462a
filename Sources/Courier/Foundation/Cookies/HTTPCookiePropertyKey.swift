/// Keys of the properties dictionary used to create an ``HTTPCookie`` and returned by ``HTTPCookie/properties``.
public struct HTTPCookiePropertyKey: RawRepresentable, Hashable, Equatable, Sendable {
    /// The key's string value.
    public var rawValue: String

    /// Creates a key from its string value.
    ///
    /// - Parameter rawValue: The key's string value.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// Creates a key from its string value.
    ///
    /// - Parameter rawValue: The key's string value.
    public init(_ rawValue: String) {
        self.rawValue = rawValue
    }

    /// The cookie's name (a `String`). Required.
    public static let name = HTTPCookiePropertyKey("Name")
    /// The cookie's value (a `String`). Required.
    public static let value = HTTPCookiePropertyKey("Value")
    /// The URL that set the cookie (a `URL` or `String`). Required when ``domain`` is absent; its host becomes the
    /// cookie's domain.
    public static let originURL = HTTPCookiePropertyKey("OriginURL")
    /// The cookie's version (`"0"` or `"1"`, or an `Int`). Optional, defaults to 0.
    public static let version = HTTPCookiePropertyKey("Version")
    /// The cookie's domain (a `String`). A leading `.` makes the cookie apply to subdomains too.
    public static let domain = HTTPCookiePropertyKey("Domain")
    /// The cookie's path (a `String`). Required.
    public static let path = HTTPCookiePropertyKey("Path")
    /// Whether the cookie is sent only over secure channels (`"TRUE"`, or a `Bool`). Optional.
    public static let secure = HTTPCookiePropertyKey("Secure")
    /// The cookie's expiry date (a `Date`, or a cookie date `String`). Optional.
    public static let expires = HTTPCookiePropertyKey("Expires")
    /// A comment for the cookie (a `String`). Optional, version 1 only.
    public static let comment = HTTPCookiePropertyKey("Comment")
    /// A URL with a comment for the cookie (a `URL` or `String`). Optional, version 1 only.
    public static let commentURL = HTTPCookiePropertyKey("CommentURL")
    /// Whether the cookie is discarded at the end of the session (`"TRUE"`). Optional.
    public static let discard = HTTPCookiePropertyKey("Discard")
    /// The cookie's maximum age in seconds (a `String` holding an integer). Optional, version 1 only.
    public static let maximumAge = HTTPCookiePropertyKey("Max-Age")
    /// The ports the cookie applies to (a `String` of comma-separated integers). Optional.
    public static let port = HTTPCookiePropertyKey("Port")
    /// The cookie's same-site policy (`"lax"` or `"strict"`, or an ``HTTPCookieStringPolicy``). Optional.
    public static let sameSitePolicy = HTTPCookiePropertyKey("SameSite")

    /// Whether the cookie is hidden from scripts (`"TRUE"`, or a `Bool`). Apple platforms accept this key without
    /// declaring it publicly.
    package static let httpOnly = HTTPCookiePropertyKey("HttpOnly")
}
