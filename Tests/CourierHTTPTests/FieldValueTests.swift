import CourierHTTP
import Testing

@Suite("FieldValue")
struct FieldValueTests {
    @Test(
        "Request values follow FoundationNetworking: a line fold is allowed, any other CR, LF or NUL is not",
        arguments: [
            ("plain", true), ("", true), ("a\r\n b", true), ("a\r\n\tb", true), ("a\r\n \r\n\tb", true),
            ("a\r\nb", false), ("a\r\n", false), ("a\r\n\r\n b", false), ("a\rb", false), ("a\nb", false),
            ("a\n b", false), ("a\r b", false), ("nul\u{0}", false), ("\r\n x", true),
        ])
    func requestValues(value: String, valid: Bool) {
        #expect(FieldValue.isValidRequestValue(value) == valid)
    }

    @Test(
        "A line fold loses its CRLF before a value is written",
        arguments: [
            ("plain", "plain"), ("with\ttab", "with\ttab"), ("ünïcode", "ünïcode"), ("", ""),
            ("a\r\nInjected: x", nil), ("a\rb", nil), ("a\r\n b", "a b"), ("a\r\n\tb", "a\tb"), ("a \r\n  b", "a   b"),
            ("a\r\nb", nil), ("a\u{0}", nil), ("a\nb", nil),
        ] as [(String, String?)])
    func unfolded(value: String, expected: String?) {
        #expect(FieldValue.unfolded(value) == expected)
    }
}
