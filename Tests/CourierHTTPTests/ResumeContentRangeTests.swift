import CourierHTTP
import Testing

@Suite("ContentRange")
struct ResumeContentRangeTests {
    @Test(
        "Valid values",
        arguments: [
            ("bytes 0-499/1234", 0...499 as ClosedRange<Int64>?, 1234 as Int64?),
            ("bytes 500-1233/1234", 500...1233, 1234),
            ("bytes 42-42/43", 42...42, 43),
            ("bytes 0-0/1", 0...0, 1),
            ("bytes 100-199/*", 100...199, nil),
            ("BYTES 1-2/3", 1...2, 3),
            ("Bytes 1-2/3", 1...2, 3),
            ("  bytes 1-2/3\t ", 1...2, 3),
            ("bytes 007-010/0100", 7...10, 100),
            ("bytes 0-9223372036854775806/9223372036854775807", 0...9_223_372_036_854_775_806, Int64.max),
            ("bytes */1234", nil, 1234),
            ("bytes */0", nil, 0),
            ("\tbytes */47022 ", nil, 47022),
        ])
    func valid(value: String, range: ClosedRange<Int64>?, complete: Int64?) throws {
        let parsed = try #require(ContentRange(headerValue: value))
        #expect(parsed.range == range)
        #expect(parsed.completeLength == complete)
        #expect(parsed.rangeLength == range.map { $0.upperBound - $0.lowerBound + 1 })
    }

    @Test(
        "Invalid values",
        arguments: [
            "",
            "   ",
            "bytes",
            "bytes ",
            "garbage",
            "items 0-1/2",
            "bytesx 0-1/2",
            "bytes0-1/2",
            "bytes=0-1/2",
            "bytes  0-1/2",
            "bytes 0 -1/2",
            "bytes 0- 1/2",
            "bytes 0-1 /2",
            "bytes 0-1/ 2",
            "bytes 0-1/2 x",
            "bytes 0-1/2,3-4/5",
            "bytes 5-4/10",
            "bytes 0-10/10",
            "bytes 0-10/5",
            "bytes 0-0/0",
            "bytes 0-1",
            "bytes 0-/10",
            "bytes -1/10",
            "bytes -1-2/10",
            "bytes +1-2/10",
            "bytes 1-2/-3",
            "bytes 0x1-2/3",
            "bytes 1-2/*/3",
            "bytes */*",
            "bytes *",
            "bytes */",
            "bytes * /10",
            "bytes */1-2",
            "bytes 1-2/3*",
            "bytes 0-1/99999999999999999999",
            "bytes 99999999999999999999-99999999999999999999/*",
            "bytes 0-9223372036854775807/9223372036854775807",
            "bytes 0-9223372036854775808/*",
            // Its length would overflow Int64 (a hostile 206 used to trap the process).
            "bytes 0-9223372036854775807/*",
            "bytes 5-9223372036854775807/*",
            "bytes １-2/3",
        ])
    func invalid(value: String) {
        #expect(ContentRange(headerValue: value) == nil)
    }
}
