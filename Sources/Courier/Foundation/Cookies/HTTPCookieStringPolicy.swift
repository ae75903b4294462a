/// The same-site policy of an ``HTTPCookie``.
public struct HTTPCookieStringPolicy: RawRepresentable, Hashable, Equatable, Sendable {
    /// The policy's string value.
    public var rawValue: String

    /// Creates a policy from its string value.
    ///
    /// - Parameter rawValue: The policy's string value.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// Creates a policy from its string value.
    ///
    /// - Parameter rawValue: The policy's string value.
    public init(_ rawValue: String) {
        self.rawValue = rawValue
    }

    /// The cookie is sent with same-site requests and with top-level cross-site navigations.
    public static let sameSiteLax = HTTPCookieStringPolicy("lax")

    /// The cookie is sent only with same-site requests.
    public static let sameSiteStrict = HTTPCookieStringPolicy("strict")
}
