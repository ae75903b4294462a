import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

/// The behavioural cases of swift-corelibs-foundation's `TestHTTPURLResponse`, ported (NSCoding is tested with the
/// coding support itself).
@Suite("HTTPURLResponse compatibility")
struct HTTPURLResponseCompatibilityTests {
    private let url = URL(string: "https://www.swift.org")!

    private func response(_ fields: [String: String]?, status: Int = 200) throws -> HTTPURLResponse {
        try #require(HTTPURLResponse(url: url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: fields))
    }

    @Test("URL, status and header fields are kept")
    func basics() throws {
        let redirect = try response(["Content-Length": "5299"], status: 302)
        #expect(redirect.url == url)
        #expect(redirect.statusCode == 302)
        #expect(try response(nil).allHeaderFields.isEmpty)
        #expect(try response([:]).allHeaderFields.isEmpty)
        let two = try response(["A": "1", "B": "2"])
        #expect(two.allHeaderFields.count == 2)
        #expect(two.allHeaderFields["A"] as? String == "1")
        #expect(two.allHeaderFields["B"] as? String == "2")
    }

    @Test(
        "Content-Length is the expected length, whatever the codings",
        arguments: [
            ["Content-Length": "997"], ["Content-Length": "997", "Transfer-Encoding": "identity"],
            ["Content-Length": "997", "Content-Encoding": "identity"],
            ["Content-Length": "997", "Transfer-Encoding": "chunked"],
            ["Content-Length": "997", "Content-Encoding": "deflate"],
            ["Content-Length": "997", "Content-Encoding": "deflate", "Transfer-Encoding": "identity"],
        ])
    func contentLength(fields: [String: String]) throws {
        #expect(try response(fields).expectedContentLength == 997)
        #expect(try response(["Server": "Apache"]).expectedContentLength == -1)
    }

    @Test(
        "Suggested file name",
        arguments: [
            ([:], "Unknown"), (["Content-Disposition": "inline"], "Unknown"),
            (["Content-Disposition": "attachment; filename=\"fname.ext\""], "fname.ext"),
            (
                [
                    "Content-Disposition":
                        "attachment; filename=genome.jpeg; modification-date=\"Wed, 12 Feb 1997 16:29:51 -0500\";"
                ], "genome.jpeg"
            ),
            (["Content-Disposition": "attachment; filename=\";.ext\""], ";.ext"),
            (
                ["Content-Disposition": "attachment; aa=bb\\; filename=\"wrong.ext\"; filename=\"fname.ext\"; cc=dd"],
                "fname.ext"
            ),
            (["content-disposition": "attachment; filename=\"/a/b/name\""], "_a_b_name"),
            (["Content-Disposition": "attachment; filename=\"a/../b/name\""], "a_.._b_name"),
        ] as [([String: String], String)])
    func suggestedFilename(fields: [String: String], expected: String) throws {
        #expect(try response(fields).suggestedFilename == expected)
    }

    @Test("MIME type and text encoding are lowercased")
    func mimeTypeAndEncoding() throws {
        let none = try response(["Server": "Apache"])
        #expect(none.mimeType == nil)
        #expect(none.textEncodingName == nil)
        #expect(try response(["Content-Type": "text/html"]).mimeType == "text/html")
        let both = try response(["Content-Type": "text/HTML; charset=ISO-8859-4"])
        #expect(both.mimeType == "text/html")
        #expect(both.textEncodingName == "iso-8859-4")
    }

    @Test(
        "value(forHTTPHeaderField:) ignores case on both sides",
        arguments: [
            ("location", "/newLocation"), ("LOcation", "/newLocation"), ("Location", "/newLocation"),
            ("x-extra-HEADER", "my Header"), ("X-EXTRA-HEADER", "my Header"), ("x-ExTrA-header", "my Header"),
            ("content-length", "123"), ("Content-Type", "text/plAIn; charset=ISO-8891-1"), ("VARY", "much"),
            ("www-authenticate", "Basic"),
        ])
    func fieldLookup(name: String, expected: String) throws {
        let fields = [
            "location": "/newLocation", "conTent-lenGTH": "123", "CONTENT-type": "text/plAIn; charset=ISO-8891-1",
            "x-extra-HEADER": "my Header", "vary": "much", "WWW-AUTHENTICATE": "Basic",
        ]
        let sut = try response(fields, status: 302)
        #expect(sut.value(forHTTPHeaderField: name) == expected)
        #expect(sut.expectedContentLength == 123)
        #expect(sut.mimeType == "text/plain")
        #expect(sut.textEncodingName == "iso-8891-1")
    }
}

@Suite("allHeaderFields spelling")
struct AllHeaderFieldsSpellingTests {
    @Test func namesAreSpelledAsDarwinSpellsThem() throws {
        let url = try #require(URL(string: "https://example.com/"))
        let response = try #require(
            HTTPURLResponse(
                url: url, statusCode: 200, httpVersion: "HTTP/1.1",
                headerFields: [
                    "content-type": "text/plain", "x-request-id": "7", "www-authenticate": "Basic", "ETAG": "\"1\"",
                ]
            ))
        let names = Set(response.allHeaderFields.keys.compactMap { $0 as? String })
        #expect(names == ["Content-Type", "x-request-id", "WWW-Authenticate", "Etag"])
        #expect(response.value(forHTTPHeaderField: "etag") == "\"1\"")
    }

    @Test func aServersLowercaseNamesArriveCapitalised() async throws {
        try await withServer { server in
            server.route("/l", response: MockResponse(headers: [("cache-control", "no-store"), ("x-trace", "abc")]))
            let session = makeSession()
            defer { session.invalidateAndCancel() }
            let outcome = await session.runDataTask(server.url("/l"))
            let fields = try #require(outcome.http?.allHeaderFields)
            #expect(fields["Cache-Control"] as? String == "no-store")
            #expect(fields["x-trace"] as? String == "abc")
            #expect(fields["cache-control"] == nil)
        }
    }
}
