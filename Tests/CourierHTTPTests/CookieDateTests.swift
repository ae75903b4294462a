import CourierHTTP
import Foundation
import Testing

@Suite("CookieDate")
struct CookieDateTests {
    @Test(
        "Parses the formats servers send",
        arguments: [
            ("Sun, 06 Nov 1994 08:49:37 GMT", 784_111_777),
            ("Sunday, 06-Nov-94 08:49:37 GMT", 784_111_777),
            ("Sun Nov  6 08:49:37 1994", 784_111_777),
            ("06 nov 1994 8:49:37", 784_111_777),
            ("Thu, 01 Jan 1970 00:00:00 GMT", 0),
            ("Wed, 21 Oct 2015 07:28:00 GMT", 1_445_412_480),
            ("Tue, 29 Feb 2000 12:00:00 GMT", 951_825_600),
            ("Fri, 01 Jan 2038 00:00:00 GMT", 2_145_916_800),
            ("Mon, 01-Jan-01 00:00:00 GMT", 978_307_200),
        ])
    func parses(value: String, seconds: Int) {
        #expect(CookieDate.parse(value) == Date(timeIntervalSince1970: TimeInterval(seconds)))
    }

    @Test(
        "Rejects invalid dates",
        arguments: [
            "", "garbage", "Sun, 06 Nov 1994", "06 Nov 1994 25:00:00", "06 Nov 1994 08:60:00", "32 Nov 1994 08:00:00",
            "31 Feb 2020 08:00:00", "29 Feb 1900 08:00:00", "06 Nov 1500 08:00:00", "06 Foo 1994 08:49:37",
            "00 Nov 1994 08:49:37",
        ])
    func rejects(value: String) {
        #expect(CookieDate.parse(value) == nil)
    }
}
