import Foundation

/// Which decoded hosts may be written into a request head (`Host:`, a proxy's absolute-form request line, `CONNECT
/// host:port`). `URL.host` is percent-decoded, so `http://a%0D%0AX%3A%20y.example/` is a valid URL whose host holds
/// a line break: written as it is, it would end the line and smuggle fields or a second request.
public enum RequestHost {
    /// Whether `host` (decoded, without IPv6 brackets) has none of the URL Standard's forbidden host code points (C0
    /// controls, space, DEL, a backslash and `#` `/` `<` `>` `?` `@` `[` `]` `^` `|`), and a `:` only in an IPv6
    /// literal (`isIPv6Literal`: the URL's encoded host has one; anywhere else it was decoded from `%3A`).
    public static func isWritable(_ host: String, isIPv6Literal: Bool) -> Bool {
        !host.utf8.contains { byte in
            switch byte {
            case 0x00...0x20, 0x7F:
                return true
            case UInt8(ascii: "#"), UInt8(ascii: "/"), UInt8(ascii: "<"), UInt8(ascii: ">"), UInt8(ascii: "?"),
                UInt8(ascii: "@"), UInt8(ascii: "["), UInt8(ascii: "\\"), UInt8(ascii: "]"), UInt8(ascii: "^"),
                UInt8(ascii: "|"):
                return true
            case UInt8(ascii: ":"):
                return !isIPv6Literal
            default:
                return false
            }
        }
    }

    /// An IPv6 literal without its zone (`fe80::1%eth0` is `fe80::1`); any other host as it is. The zone names an
    /// interface of this machine only: RFC 6874 §4 says an HTTP client MUST NOT send it, and a certificate's
    /// address entry never holds one.
    public static func withoutZone(_ host: String) -> String {
        guard let percent = host.utf8.firstIndex(of: UInt8(ascii: "%")) else { return host }
        return String(host[..<percent])
    }

    /// The name a decoded host is sent and looked up as: the host itself when it is ASCII, else its IDNA A-labels
    /// (`bücher.example` is `xn--bcher-kva.example`), or `nil` when it has none. RFC 3986 §3.2.2 writes a non-ASCII
    /// registered name percent-encoded (`b%C3%BCcher.example`, which `URL.host` decodes; a URL written with `ü`
    /// itself gets its A-labels from Foundation) and asks for the IDNA form before a DNS lookup; `Host` (RFC 9110
    /// §7.2) and SNI (RFC 6066 §3) carry ASCII only.
    public static func asciiName(_ host: String) -> String? {
        guard host.utf8.contains(where: { $0 >= 0x80 }) else { return host }
        // Foundation's IDNA conversion (UTS #46): a name it cannot convert comes back percent-encoded.
        var components = URLComponents()
        components.host = host
        guard let name = components.encodedHost, !name.isEmpty,
            name.utf8.allSatisfy({ $0 < 0x80 && $0 != UInt8(ascii: "%") })
        else { return nil }
        return name
    }
}
