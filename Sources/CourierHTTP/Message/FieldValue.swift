/// Checks on header field values before they are written.
public enum FieldValue {
    /// Whether `value` can be written as a field value: no CR, LF or NUL, which would let it end the field and
    /// smuggle in other fields or a second request (RFC 9110 §5.5). Other bytes, tabs included, are allowed.
    public static func isSafe(_ value: String) -> Bool {
        !value.utf8.contains { $0 == 0x0A || $0 == 0x0D || $0 == 0x00 }
    }
}
