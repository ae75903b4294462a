import CourierHTTP
import Testing

@Suite("MediaType")
struct MediaTypeTests {
    @Test(
        "Parses Content-Type values",
        arguments: [
            ("text/html", "text/html", nil),
            ("Text/HTML; Charset=UTF-8", "text/html", "utf-8"),
            ("  application/json ;charset=\"ISO-8859-1\"  ", "application/json", "iso-8859-1"),
            ("text/plain; format=flowed; charset=us-ascii", "text/plain", "us-ascii"),
            ("text/plain; charset=", "text/plain", nil),
            ("text/plain; charset=\"\"", "text/plain", nil),
            ("multipart/form-data; boundary=\"a;b\"; charset=utf-8", "multipart/form-data", "utf-8"),
            ("image/svg+xml", "image/svg+xml", nil),
        ] as [(String, String?, String?)])
    func parses(value: String, mimeType: String?, encoding: String?) {
        let type = MediaType(parsing: value)
        #expect(type.mimeType == mimeType)
        #expect(type.textEncodingName == encoding)
    }

    @Test(
        "Malformed values have no MIME type",
        arguments: ["", "   ", "garbage", "text/", "/html", "text/html/extra", "text /html", "té/xt", ";charset=utf-8"])
    func malformed(value: String) {
        #expect(MediaType(parsing: value).mimeType == nil)
    }
}
