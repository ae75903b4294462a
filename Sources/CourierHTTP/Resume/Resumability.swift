/// Whether an interrupted download can produce resume data, and the validators to store in it.
///
/// A download is resumable when all of these hold:
/// - the request method is `GET` (compared case-sensitively, as HTTP methods are);
/// - the response status is 200 or 206;
/// - the response has a validator for `If-Range`: a well-formed strong `ETag` or a `Last-Modified` date (a weak
///   `ETag` does not count);
/// - the server accepts byte ranges: `Accept-Ranges` lists the `bytes` token (in any case), or the response is
///   itself a 206; an `Accept-Ranges` that lists `none` rules resuming out even for a 206;
/// - the response has no `Content-Encoding` other than `identity`: the transport decodes content codings, so the
///   bytes in the partial file would not be the representation bytes a `Range` counts;
/// - at least one byte was received.
///
/// Construct it with the failable initializer: `nil` means no resume data should be produced.
public struct Resumability: Hashable, Sendable {
    /// The strong entity tag to store as `NSURLSessionResumeEntityTag`, or `nil` if the response had none.
    public let entityTag: String?
    /// The `Last-Modified` value to store as `NSURLSessionResumeServerDownloadDate`, or `nil` if the response had
    /// none.
    public let lastModified: String?

    /// Decides whether a download can be resumed, looking response header fields up with a closure.
    ///
    /// - Parameters:
    ///   - method: The request method.
    ///   - status: The response status code.
    ///   - responseHeader: Returns the value of a response header field by name (case-insensitively), or `nil`.
    ///   - bytesReceived: The number of body bytes written to the partial file.
    /// - Returns: `nil` when the download cannot produce resume data.
    public init?(
        method: String,
        status: Int,
        responseHeader: (String) -> String?,
        bytesReceived: Int64
    ) {
        guard method == "GET", status == 200 || status == 206, bytesReceived > 0 else { return nil }

        let acceptRanges = Self.tokens(responseHeader("Accept-Ranges"))
        guard !acceptRanges.contains("none"), acceptRanges.contains("bytes") || status == 206 else { return nil }

        let codings = Self.tokens(responseHeader("Content-Encoding"))
        guard codings.allSatisfy({ $0 == "identity" }) else { return nil }

        let entityTag = responseHeader("ETag").flatMap { tag in
            FieldText.hasNoControlCharacters(tag) ? EntityTag.strong(tag) : nil
        }
        let lastModified = responseHeader("Last-Modified").flatMap { date -> String? in
            let trimmed = HeaderParameters.trim(date)
            return trimmed.isEmpty || !FieldText.hasNoControlCharacters(trimmed) ? nil : trimmed
        }
        guard entityTag != nil || lastModified != nil else { return nil }
        self.entityTag = entityTag
        self.lastModified = lastModified
    }

    /// Decides whether a download can be resumed, given the response header fields.
    ///
    /// - Parameters:
    ///   - method: The request method.
    ///   - status: The response status code.
    ///   - responseHeaders: The response header fields.
    ///   - bytesReceived: The number of body bytes written to the partial file.
    /// - Returns: `nil` when the download cannot produce resume data.
    public init?(method: String, status: Int, responseHeaders: HeaderFieldDictionary, bytesReceived: Int64) {
        self.init(method: method, status: status, responseHeader: { responseHeaders[$0] }, bytesReceived: bytesReceived)
    }

    /// The comma-separated tokens of a list-valued field, lowercased, with empty elements dropped.
    static func tokens(_ value: String?) -> [String] {
        guard let value else { return [] }
        return value.split(separator: ",").map { HeaderParameters.trim($0).lowercased() }.filter { !$0.isEmpty }
    }
}
