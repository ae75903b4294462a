import CourierHTTP
import Foundation
import Testing

@Suite("URL.textWithoutCredentials")
struct TextWithoutCredentialsTests {
    @Test(arguments: [
        ("https://alice:s3cret@a.example:8443/p?q=1#f", "https://a.example:8443/p?q=1#f"),
        ("http://alice@a.example/p", "http://a.example/p"),
        ("http://a.example/p?q=1#f", "http://a.example/p?q=1#f"),
    ])
    func userAndPasswordAreLeftOut(text: String, expected: String) throws {
        let url = try #require(URL(string: text))
        #expect(url.textWithoutCredentials() == expected)
        #expect(!url.textWithoutCredentials(marking: URL.redactedCredentialMarker).contains("s3cret"))
    }

    @Test func aPasswordWithoutAUserIsLeftOutToo() throws {
        let url = try #require(URL(string: "http://:s3cret@a.example/p"))
        #expect(!url.textWithoutCredentials().contains("s3cret"))
        #expect(!url.textWithoutCredentials(marking: "REDACTED").contains("s3cret"))
    }

    @Test func aMarkerTakesTheirPlace() throws {
        let url = try #require(URL(string: "https://alice:s3cret@a.example/p"))
        #expect(url.textWithoutCredentials(marking: "REDACTED") == "https://REDACTED:REDACTED@a.example/p")
    }

    /// A URL without user info is its `absoluteString`, also a relative one.
    @Test func aURLWithoutCredentialsIsItsAbsoluteString() throws {
        let base = try #require(URL(string: "http://a.example/dir/"))
        let relative = try #require(URL(string: "file%20x?y", relativeTo: base))
        #expect(relative.textWithoutCredentials() == relative.absoluteString)
    }
}
