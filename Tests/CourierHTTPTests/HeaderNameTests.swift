import CourierHTTP
import Testing

@Suite("HeaderName")
struct HeaderNameTests {
    /// Darwin's and FoundationNetworking's spelling of response header names in `allHeaderFields`.
    @Test(
        "Response spelling",
        arguments: [
            ("content-type", "Content-Type"), ("CONTENT-LENGTH", "Content-Length"), ("etag", "Etag"),
            ("ETag", "Etag"), ("content-md5", "Content-Md5"), ("www-authenticate", "WWW-Authenticate"),
            ("WWW-AUTHENTICATE", "WWW-Authenticate"), ("x-custom-thing", "x-custom-thing"), ("X-lower", "X-lower"),
            ("set-cookie", "Set-Cookie"), ("a_b.c", "A_B.C"), ("x", "X"), ("", ""),
        ])
    func responseSpelling(name: String, expected: String) {
        #expect(HeaderName.responseSpelling(name) == expected)
    }
}
