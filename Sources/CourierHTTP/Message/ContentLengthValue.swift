/// A `Content-Length` field value (RFC 9110 §8.6): `1*DIGIT`, nothing else.
public enum ContentLengthValue {
    /// The length `value` states, or `nil` when it is not a plain run of digits (around optional whitespace) that fits
    /// an `Int64`. A sign is not a digit: `Int64("-5")` and `Int64("+5")` parse, but neither is a length, and a
    /// request must not carry `Content-Length: -5`.
    public static func parse(_ value: String) -> Int64? {
        let digits = HeaderParameters.trim(value).utf8
        guard !digits.isEmpty, digits.count <= 18, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int64(String(decoding: digits, as: UTF8.self))
    }
}
