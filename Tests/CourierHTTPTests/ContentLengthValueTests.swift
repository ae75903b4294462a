import CourierHTTP
import Testing

@Suite("Content-Length values")
struct ContentLengthValueTests {
    @Test(arguments: [
        ("0", Int64?.some(0)), ("5", 5), (" 42 ", 42), ("007", 7), ("999999999999999999", 999_999_999_999_999_999),
        ("-5", nil), ("+5", nil), ("", nil), (" ", nil), ("5 5", nil), ("0x10", nil), ("1e3", nil), ("٣", nil),
        ("9999999999999999999", nil), ("5,5", nil),
    ])
    func onlyDigitsAreALength(value: String, expected: Int64?) {
        #expect(ContentLengthValue.parse(value) == expected)
    }
}
