/// The media type and character set of a `Content-Type` header value (RFC 9110 §8.3).
///
/// ```swift
/// let type = MediaType(parsing: "Text/HTML; Charset=\"UTF-8\"")
/// type.mimeType          // "text/html"
/// type.textEncodingName  // "utf-8"
/// ```
public struct MediaType: Hashable, Sendable {
    /// The lowercased `type/subtype`, or `nil` when the value is not a well-formed media type.
    public var mimeType: String?

    /// The lowercased `charset` parameter without quotes, or `nil` when absent or empty.
    public var textEncodingName: String?

    /// Parses a `Content-Type` header value. Never fails: malformed input yields `nil` properties.
    ///
    /// - Parameter headerValue: The raw header field value.
    public init(parsing headerValue: String) {
        // Fast path for the common value without parameters (`application/json`): no parameter parsing.
        if !headerValue.utf8.contains(UInt8(ascii: ";")) {
            mimeType = Self.validMimeType(HeaderParameters.trim(headerValue))
            textEncodingName = nil
            return
        }
        let parsed = HeaderParameters(parsing: headerValue)
        mimeType = Self.validMimeType(parsed.leading)
        let charset = parsed.value(for: "charset").map(HeaderParameters.trim) ?? ""
        textEncodingName = charset.isEmpty ? nil : HeaderName.canonical(charset)
    }

    private static func validMimeType(_ value: String) -> String? {
        let parts = value.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ !$0.isEmpty && $0.utf8.allSatisfy(Token.isTokenByte) }) else {
            return nil
        }
        return HeaderName.canonical(value)
    }
}
