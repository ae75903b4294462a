/// Checks on text that ends up in a header field value or a file name.
enum FieldText {
    /// Whether a string is free of control characters (C0 controls other than horizontal tab, and DEL), so it can
    /// neither split a header field (CR, LF) nor cut a C string short (NUL).
    ///
    /// - Parameter value: The string to check.
    static func hasNoControlCharacters(_ value: String) -> Bool {
        value.utf8.allSatisfy { byte in
            byte == UInt8(ascii: "\t") || (byte >= 0x20 && byte != 0x7F)
        }
    }
}
