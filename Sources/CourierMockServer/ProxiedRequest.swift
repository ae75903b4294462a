/// A request received by a ``MockProxy``, recorded when its head arrived (refused requests included).
public struct ProxiedRequest: Sendable {
    /// The request method, e.g. `CONNECT` or `GET`.
    public var method: String
    /// The request-target as sent: `127.0.0.1:8443` for `CONNECT`, `http://127.0.0.1:8080/a?b` in absolute form.
    public var target: String
    /// The header fields in order, as received.
    public var headers: [(name: String, value: String)]
    /// The 1-based id of the client connection the request came on.
    public var connectionID: Int
    /// The status the proxy answered with: 200 for an established tunnel, 400, 403, 407 or 502 for a refusal,
    /// the origin's status for a forwarded request (its first final status), or 0 when not (yet) known.
    public var answeredStatus: Int

    /// The value of the first header called `name`, compared case-insensitively.
    public func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }
}
