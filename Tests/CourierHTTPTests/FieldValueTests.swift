import CourierHTTP
import Testing

@Suite("FieldValue")
struct FieldValueTests {
    @Test(arguments: [
        ("plain", true), ("with\ttab", true), ("ünïcode", true), ("", true),
        ("a\r\nInjected: x", false), ("a\nb", false), ("a\rb", false), ("nul\u{0}", false),
    ])
    func safeValues(value: String, safe: Bool) {
        #expect(FieldValue.isSafe(value) == safe)
    }
}
