/// One challenge of a `WWW-Authenticate` or `Proxy-Authenticate` field (RFC 9110 §11.6.1): a scheme with either a
/// token68 or a list of parameters.
public struct AuthenticationChallenge: Sendable, Equatable {
    /// The scheme as sent (`Basic`, `Digest`, ...); compare with ``isScheme(_:)``, which ignores case.
    public var scheme: String
    /// The token68 form's credentials (`Negotiate abc==`), if the challenge has that form.
    public var token68: String?
    /// The parameters in order, values unquoted. A name given twice keeps its first value (see ``parameter(_:)``).
    public var parameters: [(name: String, value: String)]

    public init(scheme: String, token68: String? = nil, parameters: [(name: String, value: String)] = []) {
        self.scheme = scheme
        self.token68 = token68
        self.parameters = parameters
    }

    /// Whether the scheme is `name`, ignoring case.
    public func isScheme(_ name: String) -> Bool {
        HeaderName.equal(scheme, name)
    }

    /// The first value of the parameter `name` (names ignore case).
    public func parameter(_ name: String) -> String? {
        parameters.first { HeaderName.equal($0.name, name) }?.value
    }

    /// The `realm` parameter.
    public var realm: String? { parameter("realm") }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.scheme == rhs.scheme && lhs.token68 == rhs.token68
            && lhs.parameters.map(\.name) == rhs.parameters.map(\.name)
            && lhs.parameters.map(\.value) == rhs.parameters.map(\.value)
    }
}
