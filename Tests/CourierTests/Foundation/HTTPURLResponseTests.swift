import Courier
import Foundation
import Testing

@Suite("HTTPURLResponse")
struct HTTPURLResponseTests {
    private let url = URL(string: "https://example.com/files/report.pdf")!

    private func response(_ headers: [String: String]?, url: URL? = nil, status: Int = 200) throws -> HTTPURLResponse {
        try #require(
            HTTPURLResponse(url: url ?? self.url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: headers))
    }

    @Test(
        "Expected content length comes from a valid Content-Length",
        arguments: [
            (["Content-Length": "42"], Int64(42)), (["content-length": "0"], 0), (["Content-Length": " 7 "], 7),
            ([:], -1), (["Content-Length": "-1"], -1), (["Content-Length": "abc"], -1), (["Content-Length": ""], -1),
            (["Content-Length": "1, 1"], -1), (["Content-Length": "99999999999999999999999"], -1),
            (["Transfer-Encoding": "chunked"], -1),
        ] as [([String: String], Int64)])
    func expectedContentLength(headers: [String: String], expected: Int64) throws {
        #expect(try response(headers).expectedContentLength == expected)
    }

    @Test(
        "MIME type and text encoding come from Content-Type",
        arguments: [
            (["Content-Type": "text/HTML; charset=UTF-8"], "text/html", "utf-8"),
            (["content-type": "application/json"], "application/json", nil),
            (["Content-Type": "nonsense"], nil, nil),
            ([:], nil, nil),
        ] as [([String: String], String?, String?)])
    func mediaType(headers: [String: String], mimeType: String?, encoding: String?) throws {
        let response = try response(headers)
        #expect(response.mimeType == mimeType)
        #expect(response.textEncodingName == encoding)
    }

    @Test(
        "Suggested file name",
        arguments: [
            ([:], "https://example.com/files/report.pdf", "report.pdf"),
            (["Content-Disposition": "attachment; filename=\"data.csv\""], "https://example.com/x", "data.csv"),
            (
                ["Content-Disposition": "attachment; filename=\"../../etc/passwd\""], "https://example.com/x",
                "_.._etc_passwd"
            ),
            (["Content-Disposition": "attachment; filename=\"..\""], "https://example.com/x.txt", "x.txt"),
            ([:], "https://example.com/", "Unknown"),
            ([:], "https://example.com", "Unknown"),
            ([:], "https://example.com/a%20b.txt", "a b.txt"),
            ([:], "https://example.com/a%2Fb.txt", "a_b.txt"),
        ] as [([String: String], String, String)])
    func suggestedFilename(headers: [String: String], urlString: String, expected: String) throws {
        let url = try #require(URL(string: urlString))
        let name = try response(headers, url: url).suggestedFilename
        #expect(name == expected)
        #expect(name?.contains("/") == false)
    }

    @Test("Header lookup is case-insensitive and allHeaderFields keeps every field")
    func headers() throws {
        let response = try response(["X-Custom": "1", "Content-Type": "text/plain"], status: 404)
        #expect(response.statusCode == 404)
        #expect(response.value(forHTTPHeaderField: "x-custom") == "1")
        #expect(response.value(forHTTPHeaderField: "missing") == nil)
        #expect(response.allHeaderFields.count == 2)
        #expect(response.allHeaderFields["X-Custom"] as? String == "1")
        #expect(try self.response(nil).allHeaderFields.isEmpty)
    }

    @Test("Ordered header pairs join repeated names")
    func orderedPairs() {
        let response = HTTPURLResponse(
            url: url, statusCode: 200, httpVersion: "HTTP/1.1",
            headerFieldPairs: [("Set-Cookie", "a=1"), ("Content-Length", "3"), ("set-cookie", "b=2")])
        #expect(response.value(forHTTPHeaderField: "Set-Cookie") == "a=1, b=2")
        #expect(response.headerFields.names == ["Set-Cookie", "Content-Length"])
        #expect(response.expectedContentLength == 3)
        #expect(response.httpVersion == "HTTP/1.1")
    }

    @Test(
        "localizedString(forStatusCode:) matches Apple platforms",
        arguments: [
            (200, "no error"), (404, "not found"), (500, "internal server error"), (102, "informational"),
            (299, "success"), (308, "redirected"), (499, "client error"), (599, "server error"), (700, "server error"),
        ])
    func localizedString(code: Int, text: String) {
        #expect(HTTPURLResponse.localizedString(forStatusCode: code) == text)
    }

    @Test("URLResponse keeps its arguments and copies as itself")
    func plainResponse() {
        let response = URLResponse(
            url: url, mimeType: "text/plain", expectedContentLength: 12, textEncodingName: "utf-8")
        #expect(response.url == url)
        #expect(response.mimeType == "text/plain")
        #expect(response.expectedContentLength == 12)
        #expect(response.textEncodingName == "utf-8")
        #expect(response.suggestedFilename == "report.pdf")
        #expect(response.copy() as AnyObject === response)
        #expect(NSURLResponseUnknownLength == -1)
    }
}
