/// A request received by a ``MockSOCKSProxy``, recorded when the proxy answered it.
public struct SOCKSRequest: Sendable {
    /// The destination as the client named it: `127.0.0.1:8080`, `[::1]:443`, or `localhost:80` for a domain
    /// name (as given, not resolved). Empty when the address type was not understood.
    public var target: String
    /// `ipv4`, `ipv6` or `domain`; for an address type the proxy does not know, its number in hex (e.g. `0x05`).
    public var addressType: String
    /// The user name that authenticated (RFC 1929), or `nil` when the proxy requires no credentials.
    public var user: String?
    /// The reply code the proxy sent: `0x00` success, `0x02` connection not allowed (not a loopback target),
    /// `0x05` connection refused, `0x07` command not supported, `0x08` address type not supported.
    public var reply: UInt8
}
