import Courier
import Foundation
import Testing

/// The behavioural cases of swift-corelibs-foundation's `TestURLRequest`, ported (those needing `NSURLRequest` are
/// left to its own tests).
@Suite("URLRequest compatibility")
struct URLRequestCompatibilityTests {
    private let url = URL(string: "http://swift.org")!

    @Test("setValue replaces case-insensitively; addValue joins with a bare comma")
    func headerFields() {
        var request = URLRequest(url: url)
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        #expect(request.allHTTPHeaderFields?["Accept"] == "application/json")
        #expect(request.allHTTPHeaderFields?["accept"] == nil)
        request.setValue("application/xml", forHTTPHeaderField: "accept")
        #expect(request.allHTTPHeaderFields == ["Accept": "application/xml"])
        request.addValue("text/html", forHTTPHeaderField: "Accept")
        #expect(request.allHTTPHeaderFields?["Accept"] == "application/xml,text/html")
    }

    @Test(
        "The standard methods are normalised to upper case; others are kept as given",
        arguments: [
            ("GET", "GET"), ("get", "GET"), ("gEt", "GET"), ("HEAD", "HEAD"), ("hEAD", "HEAD"), ("head", "HEAD"),
            ("POST", "POST"), ("post", "POST"), ("pOST", "POST"), ("PUT", "PUT"), ("put", "PUT"), ("PUt", "PUT"),
            ("DELETE", "DELETE"), ("delete", "DELETE"), ("DeleTE", "DELETE"), ("CONNECT", "CONNECT"),
            ("connect", "CONNECT"), ("cOnNeCt", "CONNECT"), ("OPTIONS", "OPTIONS"), ("options", "options"),
            ("TRACE", "TRACE"), ("trace", "trace"), ("PATCH", "PATCH"), ("patch", "patch"), ("foo", "foo"),
            ("BAR", "BAR"),
        ])
    func methodNormalization(method: String, expected: String) {
        var request = URLRequest(url: url)
        request.httpMethod = method
        #expect(request.httpMethod == expected)
    }

    @Test(
        "setValue and addValue ignore a value with CR, LF or NUL outside a line fold",
        arguments: [
            "\r\nevil: hello\r\n\r\nGET /other HTTP/1.1\r\nevil: hello", "invalid\0NUL", "invalid\rCR", "invalidCR\r",
            "invalid\nLF", "invalidLF\n", "invalid\r\nCRLF", "invalidCRLF\r\n", "invalid\r\rCRCR", "fold\r\n\r\n x",
        ])
    func invalidHeaderValues(value: String) {
        var request = URLRequest(url: url)
        request.setValue("Bar" + value, forHTTPHeaderField: "Foo")
        #expect(request.value(forHTTPHeaderField: "Foo") == nil)
        request.addValue("Bar" + value, forHTTPHeaderField: "Foo")
        #expect(request.value(forHTTPHeaderField: "Foo") == nil)
        request.setValue("ok", forHTTPHeaderField: "Foo")
        request.setValue("Bar" + value, forHTTPHeaderField: "Foo")
        request.addValue("Bar" + value, forHTTPHeaderField: "Foo")
        #expect(request.value(forHTTPHeaderField: "Foo") == "ok")
    }

    @Test("A line fold (CRLF then a space or tab) is a valid value", arguments: ["Bar\r\n\tBuz", "Bar\r\n Buz"])
    func lineFoldedHeaderValues(value: String) {
        var request = URLRequest(url: url)
        request.setValue(value, forHTTPHeaderField: "Foo")
        #expect(request.value(forHTTPHeaderField: "Foo") == value)
    }

    @Test("Changing a copy leaves the original alone")
    func mutableCopy() {
        let original = URLRequest(url: url)
        var copy = original
        copy.mainDocumentURL = URL(string: "http://apple.com")
        copy.url = URL(string: "http://ibm.com")
        copy.httpMethod = "HEAD"
        copy.addValue("text/html", forHTTPHeaderField: "Accept")
        #expect(original.mainDocumentURL == nil)
        #expect(original.httpMethod == "GET")
        #expect(original.url == url)
        #expect(original.allHTTPHeaderFields == nil)
    }

    @Test("A relative URL is kept absolute by the initialiser and as given by the setter")
    func relativeURL() throws {
        let relative = try #require(URL(string: "/get", relativeTo: URL(string: "http://httpbin.org")))
        var request = URLRequest(url: relative)
        #expect(request.url?.description == "http://httpbin.org/get")
        #expect(request.url?.baseURL == nil)
        request.url = relative
        #expect(request.url?.description == "/get -- http://httpbin.org")
        #expect(request.url?.absoluteString == "http://httpbin.org/get")
    }
}
