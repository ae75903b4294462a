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
}
