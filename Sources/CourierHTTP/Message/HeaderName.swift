/// Helpers for comparing HTTP header field names, which are case-insensitive ASCII tokens.
public enum HeaderName {
    /// Whether two header field names are equal, ignoring ASCII case.
    ///
    /// - Parameters:
    ///   - lhs: A header field name.
    ///   - rhs: Another header field name.
    @inlinable
    public static func equal(_ lhs: String, _ rhs: String) -> Bool {
        // Inlined where it is called: most names in a lookup differ in length and are rejected here.
        lhs.utf8.count == rhs.utf8.count && sameBytesIgnoringCase(lhs, rhs)
    }

    /// Byte by byte over contiguous UTF-8 (every native string, small ones included), for names of equal length.
    @usableFromInline
    static func sameBytesIgnoringCase(_ lhs: String, _ rhs: String) -> Bool {
        // Borrowed, not copied: copying a name of more than 15 bytes into a `var` for `withUTF8` cost a retain and a
        // release of each string per comparison.
        let contiguous = lhs.utf8.withContiguousStorageIfAvailable { left in
            rhs.utf8.withContiguousStorageIfAvailable { right in
                for index in 0..<left.count where asciiLowercase(left[index]) != asciiLowercase(right[index]) {
                    return false
                }
                return true
            }
        }
        if case let same?? = contiguous { return same }
        // A string bridged from elsewhere, without contiguous UTF-8.
        return zip(lhs.utf8, rhs.utf8).allSatisfy { asciiLowercase($0) == asciiLowercase($1) }
    }

    /// The canonical (ASCII-lowercased) form of a header field name, suitable as a dictionary key.
    ///
    /// - Parameter name: A header field name.
    public static func canonical(_ name: String) -> String {
        String(decoding: name.utf8.map(asciiLowercase), as: UTF8.self)
    }

    /// The spelling Darwin (and FoundationNetworking) give a response header field's name in `allHeaderFields`:
    /// each word capitalised (`content-type` → `Content-Type`, `ETAG` → `Etag`), where a word starts after any
    /// character that is not an ASCII letter or digit; `WWW-Authenticate` keeps its capitals, and a name starting
    /// with `x-` (in any case) is left as it was received.
    ///
    /// - Parameter name: A header field name as received.
    public static func responseSpelling(_ name: String) -> String {
        let bytes = Array(name.utf8)
        if bytes.count >= 2, asciiLowercase(bytes[0]) == UInt8(ascii: "x"), bytes[1] == UInt8(ascii: "-") {
            return name
        }
        if equal(name, "WWW-Authenticate") { return "WWW-Authenticate" }
        var startsWord = true
        let spelled = bytes.map { byte -> UInt8 in
            let isAlphanumeric =
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
            defer { startsWord = !isAlphanumeric }
            return startsWord ? asciiUppercase(byte) : asciiLowercase(byte)
        }
        return String(decoding: spelled, as: UTF8.self)
    }

    private static func asciiUppercase(_ byte: UInt8) -> UInt8 {
        (byte >= 0x61 && byte <= 0x7A) ? byte - 0x20 : byte
    }

    private static func asciiLowercase(_ byte: UInt8) -> UInt8 {
        (byte >= 0x41 && byte <= 0x5A) ? byte + 0x20 : byte
    }
}
