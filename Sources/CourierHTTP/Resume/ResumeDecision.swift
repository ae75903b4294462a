/// What a download engine does with the response to a request it sent with `Range: bytes=<offset>-` to resume a
/// download.
public enum ResumeDecision: Hashable, Sendable {
    /// The server sent the rest of the representation: keep the partial file, truncated to `offset` bytes, and append
    /// the body to it.
    ///
    /// `expectedTotal` is the length of the complete representation, or `-1`
    /// (`NSURLSessionTransferSizeUnknown`) when the server sent `*`. `finalLength` is the file's length once the
    /// range's last byte is in it (`Content-Range`'s last byte position + 1): a body that ends sooner (a connection
    /// closed early on a response framed by the close) must fail the download, never complete it.
    case append(offset: Int64, expectedTotal: Int64, finalLength: Int64)
    /// The server sent the whole representation (it ignored `Range`, or the `If-Range` validator no longer matched):
    /// throw the partial file away and write the body from the start.
    ///
    /// `expectedTotal` is the response's `Content-Length`, or `-1` when it is unknown.
    case restartFromZero(expectedTotal: Int64)
    /// The server refused the range (416) or answered 206 with a `Content-Range` that cannot be trusted: throw the
    /// partial file away, discard this response, and send the request again without `Range` and `If-Range`.
    case retryWithoutRange
    /// Any other status: the resume attempt is over, and the response is handled as the ordinary response of the
    /// new request (for example a 404 or a 500 that fails or completes the download as usual).
    case notResumable

    /// Decides how to use the response to a resume request.
    ///
    /// A 206 is appended only when
    /// - it is a range of the same representation the partial file holds: its strong `ETag` (or, when the partial
    ///   file has none, its `Last-Modified` date) equals the one the partial file came with (see
    ///   ``PartialDownload/isSameRepresentation(responseHeader:)``) — a server that ignores `If-Range` must not
    ///   splice a new version onto an old prefix;
    /// - its `Content-Range` is a satisfied byte range that starts exactly at the partial file's offset, ends at the
    ///   last byte of the representation when its length is known, from this response or from the interrupted one
    ///   (a shorter range would leave the file incomplete), and gives the same complete length as the interrupted
    ///   response did, when both are known;
    /// - it agrees with `Content-Length` when that is present;
    /// - it has no `Content-Encoding` other than `identity`: the transport decodes content codings, so the bytes
    ///   appended would not be the representation bytes the range counts (the partial file itself was only kept
    ///   for an unencoded response, see ``Resumability``).
    ///
    /// Any other 206 gives ``retryWithoutRange``: the partial file is thrown away and the whole representation
    /// fetched again.
    ///
    /// - Parameters:
    ///   - partial: What the partial file holds; its offset is the first byte position the request asked for
    ///     (the `bytes=<offset>-` value).
    ///   - status: The response status code.
    ///   - responseHeader: Returns the value of a response header field by name (case-insensitively), or `nil`.
    /// - Returns: What to do with the partial file and the response.
    public static func decide(
        resuming partial: PartialDownload,
        status: Int,
        responseHeader: (String) -> String?
    ) -> ResumeDecision {
        let contentLength = responseHeader("Content-Length").flatMap { Int64(HeaderParameters.trim($0)) }
        switch status {
        case 200:
            let total = contentLength.flatMap { $0 >= 0 ? $0 : nil } ?? -1
            return .restartFromZero(expectedTotal: total)
        case 206:
            guard let contentRange = responseHeader("Content-Range"),
                let parsed = ContentRange(headerValue: contentRange),
                let range = parsed.range, range.lowerBound == partial.offset,
                let rangeLength = parsed.rangeLength,
                partial.isSameRepresentation(responseHeader: responseHeader)
            else { return .retryWithoutRange }
            if let contentLength, contentLength != rangeLength {
                return .retryWithoutRange
            }
            let codings = responseHeader("Content-Encoding").map(Resumability.tokens) ?? []
            guard codings.allSatisfy({ $0 == "identity" }) else { return .retryWithoutRange }
            let known = partial.totalLength
            if let complete = parsed.completeLength, let known, known != complete { return .retryWithoutRange }
            // The range must end at the representation's last byte whenever its length is known, stated now (`/100`)
            // or by the interrupted response (`/*` now): a shorter range would complete a file that lacks its end.
            if let complete = parsed.completeLength ?? known, range.upperBound != complete - 1 {
                return .retryWithoutRange
            }
            return .append(
                offset: partial.offset, expectedTotal: parsed.completeLength ?? -1, finalLength: range.upperBound + 1)
        case 416:
            return .retryWithoutRange
        default:
            return .notResumable
        }
    }
}
