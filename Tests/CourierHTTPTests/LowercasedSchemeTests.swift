import CourierHTTP
import Foundation
import Testing

@Suite("URL.lowercasedScheme")
struct LowercasedSchemeTests {
    @Test(arguments: [
        ("http://a.test/", "http"), ("https://a.test/", "https"), ("HTTP://a.test/", "http"),
        ("HtTpS://a.test/", "https"), ("Data:,x", "data"), ("http+unix://%2Fs/", "http+unix"),
    ])
    func schemesComeInLowerCase(text: String, expected: String) throws {
        let url = try #require(URL(string: text))
        #expect(url.lowercasedScheme == expected)
    }

    @Test func aRelativeURLHasNone() throws {
        #expect(try #require(URL(string: "/path")).lowercasedScheme == nil)
    }
}
