import CourierHTTP
import Foundation
import Testing

/// `data:` URLs (RFC 2397): media types, charsets, base64 and percent-encoding, and what is refused.
@Suite("data: URLs")
struct DataURLTests {
    struct Row: Sendable, CustomTestStringConvertible {
        let url: String
        let mimeType: String
        let charset: String?
        let body: [UInt8]
        var testDescription: String { url }
    }

    static let valid: [Row] = [
        Row(
            url: "data:,Hello%2C%20World%21", mimeType: "text/plain", charset: "us-ascii",
            body: Array("Hello, World!".utf8)),
        Row(
            url: "data:text/plain;base64,SGVsbG8sIFdvcmxkIQ==", mimeType: "text/plain", charset: nil,
            body: Array("Hello, World!".utf8)),
        Row(
            url: "DATA:Text/HTML;Charset=UTF-8,%3Ch1%3E", mimeType: "text/html", charset: "utf-8",
            body: Array("<h1>".utf8)),
        Row(url: "data:;charset=utf-8,%C3%A9", mimeType: "text/plain", charset: "utf-8", body: [0xC3, 0xA9]),
        Row(
            url: "data:application/octet-stream;base64,AAEC/w", mimeType: "application/octet-stream", charset: nil,
            body: [0, 1, 2, 255]),
        Row(
            url: "data:image/png;BASE64,iVBO%20Rw0K", mimeType: "image/png", charset: nil,
            body: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A]),
        Row(url: "data:,", mimeType: "text/plain", charset: "us-ascii", body: []),
        Row(url: "data:text/plain,a,b,c", mimeType: "text/plain", charset: nil, body: Array("a,b,c".utf8)),
        Row(url: "data:text/plain;base64,", mimeType: "text/plain", charset: nil, body: []),
        // The fragment belongs to the URL, not to the data; an escaped `#` is data.
        Row(url: "data:text/plain,hello#frag", mimeType: "text/plain", charset: nil, body: Array("hello".utf8)),
        Row(url: "data:text/plain,a%23b#c#d", mimeType: "text/plain", charset: nil, body: Array("a#b".utf8)),
        Row(url: "data:;base64,SGVsbG8=#frag", mimeType: "text/plain", charset: "us-ascii", body: Array("Hello".utf8)),
        Row(url: "data:,#", mimeType: "text/plain", charset: "us-ascii", body: []),
    ]

    @Test(arguments: valid)
    func decodes(row: Row) throws {
        let parsed = try DataURL(parsing: row.url)
        #expect(parsed.mimeType == row.mimeType)
        #expect(parsed.textEncodingName == row.charset)
        #expect(Array(parsed.body) == row.body)
    }

    static let invalid = [
        "data:text/plain",  // no comma
        "data:",
        "http:,x",  // not a data: URL
        "data:,%zz",  // broken escape
        "data:,abc%4",  // escape cut short
        "data:;base64,!!!!",  // not base64
        "data:;base64,A",  // one character can never be base64
        "data:text/;base64,AAAA",  // no subtype
        "data:te xt/plain,a",  // space in the type
    ]

    @Test(arguments: invalid)
    func refuses(url: String) {
        #expect(throws: TransferError.self) { try DataURL(parsing: url) }
        do {
            _ = try DataURL(parsing: url)
        } catch {
            #expect(error.urlErrorCode == .badURL)
        }
    }

    @Test func aLargeURLDecodesAndItsErrorMessagesStayShort() throws {
        let bytes = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let parsed = try DataURL(parsing: "data:application/octet-stream;base64," + Data(bytes).base64EncodedString())
        #expect(Array(parsed.body) == bytes)
        do {
            _ = try DataURL(parsing: "data:;base64," + String(repeating: "A", count: 100_001))
            Issue.record("an invalid URL was accepted")
        } catch {
            #expect(error.detail.count < 200)
        }
    }
}
