import CourierHTTP
import Testing

@Suite("ResumeRequestHeaders")
struct ResumeRequestHeadersTests {
    static let date = "Wed, 21 Oct 2015 07:28:00 GMT"

    @Test(
        "Range and If-Range",
        arguments: [
            (Int64(100), "\"abc\"" as String?, nil as String?, "\"abc\"" as String?),
            (100, "\"abc\"", date, "\"abc\""),
            (100, " \"abc\" ", nil, "\"abc\""),
            (100, "\"\"", nil, "\"\""),
            (100, "W/\"abc\"", date, nil),
            (100, "W/\"abc\"", nil, nil),
            (100, "w/\"abc\"", nil, nil),
            (100, "abc", date, nil),
            (100, "abc", nil, nil),
            (100, "\"a\"b\"", nil, nil),
            (100, "\"a\" , \"b\"", date, nil),
            (100, "\"a\r\nX-Evil: 1\"", date, nil),
            (100, " ", date, date),
            (100, nil, date, date),
            (100, nil, "  \(date)\t", date),
            (100, nil, "", nil),
            (100, nil, "Wed\r\nX-Evil: 1", nil),
            (100, nil, nil, nil),
            (0, "\"abc\"", date, nil),
            (-1, "\"abc\"", date, nil),
            (Int64.max, "\"abc\"", nil, "\"abc\""),
        ])
    func fields(offset: Int64, entityTag: String?, lastModified: String?, ifRange: String?) {
        let fields = ResumeRequestHeaders.fields(resumingAt: offset, entityTag: entityTag, lastModified: lastModified)
        if let ifRange {
            #expect(fields?.names == ["Range", "If-Range"])
            #expect(fields?["Range"] == "bytes=\(offset)-")
            #expect(fields?["If-Range"] == ifRange)
        } else {
            #expect(fields == nil)
        }
    }
}
