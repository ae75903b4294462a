import Foundation

/// Whether an interrupted download can produce resume data, and the validators to store in it.
///
/// A download is resumable when all of these hold:
/// - the request method is `GET` (compared case-sensitively, as HTTP methods are);
/// - the app's request asked for the whole representation: no `Range` field of its own. Resume data continues the
///   representation from the partial file's length, which counts from its first byte: the file of a range the app
///   asked for (`bytes=100-`, `bytes=0-499`) would be spliced with, or grown into, bytes it never asked for;
/// - the response status is 200 or 206;
/// - the response has a validator for `If-Range`: a well-formed strong `ETag`, or, when the response has no `ETag`
///   at all, a `Last-Modified` date that is a strong validator (RFC 9110 §8.8.2.2: at least 60 seconds before the
///   response's `Date`). A weak `ETag` does not count, and rules the date out too (RFC 9110 §13.1.5: a client sends
///   a date in `If-Range` only when it has no entity tag). A date closer to `Date` may name two versions written in
///   the same second, and a range of the newer one would be spliced onto the older prefix;
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
    /// none. Without ``entityTag`` it is always a strong validator.
    public let lastModified: String?

    /// Decides whether a download can be resumed, looking response header fields up with a closure.
    ///
    /// - Parameters:
    ///   - method: The request method.
    ///   - rangeRequested: Whether the app's request carries a `Range` field of its own (not the one a resume adds).
    ///   - status: The response status code.
    ///   - responseHeader: Returns the value of a response header field by name (case-insensitively), or `nil`.
    ///   - bytesReceived: The number of body bytes written to the partial file.
    /// - Returns: `nil` when the download cannot produce resume data.
    public init?(
        method: String,
        rangeRequested: Bool,
        status: Int,
        responseHeader: (String) -> String?,
        bytesReceived: Int64
    ) {
        guard method == "GET", !rangeRequested, status == 200 || status == 206, bytesReceived > 0 else { return nil }

        let acceptRanges = Self.tokens(responseHeader("Accept-Ranges"))
        guard !acceptRanges.contains("none"), acceptRanges.contains("bytes") || status == 206 else { return nil }

        let codings = Self.tokens(responseHeader("Content-Encoding"))
        guard codings.allSatisfy({ $0 == "identity" }) else { return nil }

        let entityTagField = responseHeader("ETag")
        let entityTag = entityTagField.flatMap { tag in
            FieldText.hasNoControlCharacters(tag) ? EntityTag.strong(tag) : nil
        }
        let lastModified = responseHeader("Last-Modified").flatMap { date -> String? in
            let trimmed = HeaderParameters.trim(date)
            return trimmed.isEmpty || !FieldText.hasNoControlCharacters(trimmed) ? nil : trimmed
        }
        if entityTag == nil {
            // The date is the validator: only when there is no entity tag at all, and only a strong one.
            let hasEntityTag = entityTagField.map { !HeaderParameters.trim($0).isEmpty } ?? false
            guard !hasEntityTag, let lastModified,
                Self.isStrongValidator(lastModified: lastModified, date: responseHeader("Date"))
            else { return nil }
        }
        self.entityTag = entityTag
        self.lastModified = lastModified
    }

    /// Whether a response's `Last-Modified` date is a strong validator a client may send in `If-Range` (RFC 9110
    /// §8.8.2.2): the response has a `Date`, and the modification is at least 60 seconds before it. Two versions
    /// sent in the same second share a `Last-Modified`, but one of them then has a `Date` equal to it; the margin
    /// covers a `Date` and a `Last-Modified` taken from different clocks.
    ///
    /// - Parameters:
    ///   - lastModified: The response's `Last-Modified` value.
    ///   - date: The response's `Date` value, if any.
    /// - Returns: `false` when either date is missing or cannot be parsed.
    public static func isStrongValidator(lastModified: String, date: String?) -> Bool {
        guard let date, let sent = CookieDate.parse(date), let modified = CookieDate.parse(lastModified) else {
            return false
        }
        return sent.timeIntervalSince(modified) >= strongValidatorMargin
    }

    /// How long before the response's `Date` a `Last-Modified` date must be to be strong (RFC 9110 §8.8.2.2).
    static let strongValidatorMargin: Double = 60

    /// Decides whether a download can be resumed, given the response header fields.
    ///
    /// - Parameters:
    ///   - method: The request method.
    ///   - rangeRequested: Whether the app's request carries a `Range` field of its own (not the one a resume adds).
    ///   - status: The response status code.
    ///   - responseHeaders: The response header fields.
    ///   - bytesReceived: The number of body bytes written to the partial file.
    /// - Returns: `nil` when the download cannot produce resume data.
    public init?(
        method: String, rangeRequested: Bool, status: Int, responseHeaders: HeaderFieldDictionary,
        bytesReceived: Int64
    ) {
        self.init(
            method: method, rangeRequested: rangeRequested, status: status, responseHeader: { responseHeaders[$0] },
            bytesReceived: bytesReceived)
    }

    /// The comma-separated tokens of a list-valued field, lowercased, with empty elements dropped.
    static func tokens(_ value: String?) -> [String] {
        guard let value else { return [] }
        return value.split(separator: ",").map { HeaderParameters.trim($0).lowercased() }.filter { !$0.isEmpty }
    }
}
