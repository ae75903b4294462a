import CourierHTTP
import Testing

@Suite("PercentDecoding")
struct PercentDecodingTests {
    @Test(
        "Decodes escapes",
        arguments: [
            ("abc", Array("abc".utf8)), ("%41%62", [0x41, 0x62]), ("%e2%82%AC", [0xE2, 0x82, 0xAC]), ("", []),
            ("a%20b", [0x61, 0x20, 0x62]),
        ] as [(String, [UInt8])])
    func decodes(value: String, bytes: [UInt8]) {
        #expect(PercentDecoding.decode(value) == bytes)
    }

    @Test("Rejects broken escapes", arguments: ["%", "%4", "%G1", "abc%", "%%"])
    func rejects(value: String) {
        #expect(PercentDecoding.decode(value) == nil)
    }
}
