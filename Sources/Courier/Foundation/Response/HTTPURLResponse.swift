import CourierHTTP
import Foundation

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
    /// The `Set-Cookie` fields as received, one per line, when the response came from the network (`nil` when it
    /// was made from a dictionary, whose joined values must be split again): cookies are parsed line by line, so a
    /// comma in a value never splits a cookie in two.
    package let setCookieLines: [String]?

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
        setCookieLines = nil
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
        setCookieLines = headerFieldPairs.filter { HeaderName.equal($0.0, "Set-Cookie") }.map(\.1)
        storedStatusCode = statusCode
        headerFields = headers
        self.httpVersion = httpVersion
        super.init(
            url: url, mimeType: nil, expectedContentLength: derived.expectedContentLength, textEncodingName: nil)
    }

    /// Decodes a response archived with ``encode(with:)``.
    ///
    /// Fails (returns `nil`) when the coder is not a keyed coder, or the archive holds no URL or no valid header
    /// fields.
    ///
    /// - Parameter aDecoder: A keyed decoder, such as `NSKeyedUnarchiver`.
    public required init?(coder aDecoder: NSCoder) {
        guard aDecoder.allowsKeyedCoding,
            let url = aDecoder.decodeObject(of: NSURL.self, forKey: ArchiveKey.url),
            let flat = aDecoder.decodeObject(of: [NSArray.self, NSString.self], forKey: ArchiveKey.headerFields)
                as? [String], flat.count.isMultiple(of: 2)
        else { return nil }
        let pairs = stride(from: 0, to: flat.count, by: 2).map { (flat[$0], flat[$0 + 1]) }
        let headers = HeaderFieldDictionary(pairs: pairs)
        setCookieLines = pairs.filter { HeaderName.equal($0.0, "Set-Cookie") }.map(\.1)
        storedStatusCode = aDecoder.decodeInteger(forKey: ArchiveKey.statusCode)
        headerFields = headers
        httpVersion = aDecoder.decodeObject(of: NSString.self, forKey: ArchiveKey.httpVersion).map { $0 as String }
        super.init(
            url: url as URL, mimeType: nil, expectedContentLength: Derived(headers).expectedContentLength,
            textEncodingName: nil)
    }

    /// Archives the response: what ``URLResponse/encode(with:)`` archives, plus the status code, the header fields
    /// (in order, with their spelling) and the HTTP version.
    ///
    /// - Parameter aCoder: A keyed coder, such as `NSKeyedArchiver`.
    open override func encode(with aCoder: NSCoder) {
        super.encode(with: aCoder)
        guard aCoder.allowsKeyedCoding else { return }
        aCoder.encode(storedStatusCode, forKey: ArchiveKey.statusCode)
        let flat = headerFields.flatMap { [NSString(string: $0.name), NSString(string: $0.value)] }
        aCoder.encode(NSArray(array: flat), forKey: ArchiveKey.headerFields)
        aCoder.encode(httpVersion.map { NSString(string: $0) }, forKey: ArchiveKey.httpVersion)
    }

    override func hasSameContents(as other: URLResponse) -> Bool {
        guard let other = other as? HTTPURLResponse, super.hasSameContents(as: other) else { return false }
        return statusCode == other.statusCode && headerFields == other.headerFields && httpVersion == other.httpVersion
    }

    /// A readable summary: the object, its URL, status code and header fields in the order received, like
    /// `<Courier.HTTPURLResponse: 0x…> { URL: https://example.com/ } { Status Code: 200, Headers { … } }`.
    open override var description: String {
        var result =
            super.description + " { URL: \(url?.absoluteString ?? "(null)") } { Status Code: \(statusCode), Headers {\n"
        for field in headerFields {
            result += "    \"\(field.name)\" = \"\(field.value)\";\n"
        }
        return result + "} }"
    }

    /// The response's HTTP status code.
    open var statusCode: Int { storedStatusCode }

    /// The MIME type from `Content-Type`, lowercased, or `nil`.
    open override var mimeType: String? { mediaType.mimeType }

    /// The `charset` parameter of `Content-Type`, or `nil`.
    open override var textEncodingName: String? { mediaType.textEncodingName }

    /// `Content-Type`, parsed when asked: most responses are never asked, and a cache of the parse would cost every
    /// response a lock of its own.
    private var mediaType: MediaType {
        headerFields["Content-Type"].map(MediaType.init(parsing:)) ?? MediaType(parsing: "")
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
