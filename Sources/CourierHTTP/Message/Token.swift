/// The HTTP `token` grammar (RFC 9110 §5.6.2).
public enum Token {
    /// Whether a byte is a `tchar`: a visible ASCII character other than a delimiter.
    ///
    /// - Parameter byte: A UTF-8 code unit.
    public static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "A")...UInt8(ascii: "Z"):
            return true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
            UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
            UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// Whether a string is a non-empty token.
    ///
    /// - Parameter value: The string to check.
    public static func isToken(_ value: String) -> Bool {
        !value.isEmpty && value.utf8.allSatisfy(isTokenByte)
    }
}
