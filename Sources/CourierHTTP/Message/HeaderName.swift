/// Helpers for comparing HTTP header field names, which are case-insensitive ASCII tokens.
public enum HeaderName {
    /// Whether two header field names are equal, ignoring ASCII case.
    ///
    /// - Parameters:
    ///   - lhs: A header field name.
    ///   - rhs: Another header field name.
    public static func equal(_ lhs: String, _ rhs: String) -> Bool {
        let left = lhs.utf8
        let right = rhs.utf8
        guard left.count == right.count else { return false }
        return zip(left, right).allSatisfy { asciiLowercase($0) == asciiLowercase($1) }
    }

    /// The canonical (ASCII-lowercased) form of a header field name, suitable as a dictionary key.
    ///
    /// - Parameter name: A header field name.
    public static func canonical(_ name: String) -> String {
        String(decoding: name.utf8.map(asciiLowercase), as: UTF8.self)
    }

    private static func asciiLowercase(_ byte: UInt8) -> UInt8 {
        (byte >= 0x41 && byte <= 0x5A) ? byte + 0x20 : byte
    }
}
