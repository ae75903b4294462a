import CourierHTTP
import Foundation
import NIOConcurrencyHelpers

/// The metadata associated with the response to an HTTP protocol URL load request.
///
/// Header field names are case-insensitive: ``value(forHTTPHeaderField:)`` finds `Content-Type` when asked for
/// `content-type`. The MIME type, text encoding and expected content length are derived from the `Content-Type` and
/// `Content-Length` header fields.
open class HTTPURLResponse: URLResponse, @unchecked Sendable {
    /// The response's HTTP status code.
    private let storedStatusCode: Int

    /// The response's header fields, in the order received, with case-insensitive names.
    package let headerFields: HeaderFieldDictionary

    /// The HTTP version of the response, such as `"HTTP/1.1"`, if known.
    package let httpVersion: String?

    /// Creates an HTTP response.
    ///
    /// - Parameters:
    ///   - url: The URL from which the response was generated.
    ///   - statusCode: The HTTP status code.
    ///   - HTTPVersion: The HTTP version, such as `"HTTP/1.1"`.
    ///   - headerFields: The response's header fields.
    /// - Returns: The response. Courier never fails to create one; the initializer is failable to match Apple's.
    public init?(url: URL, statusCode: Int, httpVersion HTTPVersion: String?, headerFields: [String: String]?) {
        let headers = HeaderFieldDictionary(headerFields ?? [:])
        let derived = Derived(headers)
        storedStatusCode = statusCode
        self.headerFields = headers
        httpVersion = HTTPVersion
        super.init(
            url: url, mimeType: nil, expectedContentLength: derived.expectedContentLength, textEncodingName: nil)
    }

    /// Creates an HTTP response from header fields in the order they were received.
    ///
    /// A name that occurs several times has its values joined with `", "`.
    ///
    /// - Parameters:
    ///   - url: The URL from which the response was generated.
    ///   - statusCode: The HTTP status code.
    ///   - httpVersion: The HTTP version, such as `"HTTP/1.1"`.
    ///   - headerFieldPairs: The header fields, in order.
    package init(url: URL, statusCode: Int, httpVersion: String?, headerFieldPairs: [(String, String)]) {
        let headers = HeaderFieldDictionary(pairs: headerFieldPairs)
        let derived = Derived(headers)
        storedStatusCode = statusCode
        headerFields = headers
        self.httpVersion = httpVersion
        super.init(
            url: url, mimeType: nil, expectedContentLength: derived.expectedContentLength, textEncodingName: nil)
    }

    /// The response's HTTP status code.
    open var statusCode: Int { storedStatusCode }

    /// The MIME type from `Content-Type`, lowercased, or `nil`.
    open override var mimeType: String? { mediaType.mimeType }

    /// The `charset` parameter of `Content-Type`, or `nil`.
    open override var textEncodingName: String? { mediaType.textEncodingName }

    /// `Content-Type`, parsed on first use: most responses are never asked for it.
    private let parsedMediaType = NIOLockedValueBox<MediaType?>(nil)

    private var mediaType: MediaType {
        if let parsed = parsedMediaType.withLockedValue({ $0 }) { return parsed }
        let parsed = headerFields["Content-Type"].map(MediaType.init(parsing:)) ?? MediaType(parsing: "")
        parsedMediaType.withLockedValue { $0 = parsed }
        return parsed
    }

    /// All HTTP header fields of the response, keyed by name (as `String`) spelled as Darwin spells it: each word
    /// capitalised (`content-type` → `Content-Type`), `WWW-Authenticate` as written, and `x-` names as received.
    open var allHeaderFields: [AnyHashable: Any] {
        var result: [AnyHashable: Any] = [:]
        for (name, value) in headerFields {
            result[HeaderName.responseSpelling(name)] = value
        }
        return result
    }

    /// Returns the value of a header field, whose name is compared case-insensitively.
    ///
    /// - Parameter field: The header field name.
    /// - Returns: The value, or `nil` if the response has no such field.
    open func value(forHTTPHeaderField field: String) -> String? {
        headerFields[field]
    }

    /// A suggested file name: the `Content-Disposition` file name if there is a usable one, otherwise the last path
    /// component of the URL, otherwise `"Unknown"`. The result never contains `/` or `\`.
    open override var suggestedFilename: String? {
        headerFields["Content-Disposition"].flatMap(ContentDisposition.filename(from:)) ?? super.suggestedFilename
    }

    /// Returns a short lowercase description of an HTTP status code, as Apple platforms do: `"no error"` for 200,
    /// `"not found"` for 404, `"internal server error"` for 500. Codes without their own description get their
    /// class's: `"informational"`, `"success"`, `"redirected"`, `"client error"` or `"server error"`.
    ///
    /// - Parameter statusCode: An HTTP status code.
    open class func localizedString(forStatusCode statusCode: Int) -> String {
        HTTPStatusText.localizedDescription(forStatusCode: statusCode)
    }

    /// The values a response derives from its header fields.
    private struct Derived {
        let expectedContentLength: Int

        init(_ headers: HeaderFieldDictionary) {
            expectedContentLength = headers["Content-Length"].flatMap(Self.contentLength) ?? -1
        }

        /// A valid `Content-Length` is a non-negative decimal integer that fits in an `Int`.
        private static func contentLength(_ value: String) -> Int? {
            // Bytes, not Foundation's character sets: this runs for every response.
            var result = 0
            var sawDigit = false
            var trailingSpace = false
            for byte in value.utf8 {
                switch byte {
                case 0x30...0x39:
                    guard !trailingSpace else { return nil }
                    let (times10, overflow1) = result.multipliedReportingOverflow(by: 10)
                    let (sum, overflow2) = times10.addingReportingOverflow(Int(byte - 0x30))
                    guard !overflow1, !overflow2 else { return nil }
                    result = sum
                    sawDigit = true
                case 0x20, 0x09:
                    if sawDigit { trailingSpace = true }
                default:
                    return nil
                }
            }
            return sawDigit ? result : nil
        }
    }
}
