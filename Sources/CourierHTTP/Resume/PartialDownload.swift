/// What a partial download file holds: how many bytes of which version of the representation.
///
/// ``ResumeDecision`` compares a resumed response with this before it lets the engine append to the file: partial
/// content may only be combined with stored content when both carry the same strong validator (RFC 9110 §13.1.5,
/// RFC 9111 §3.4). A server that ignores `If-Range` and answers 206 for a changed resource would otherwise splice two
/// versions into one file.
public struct PartialDownload: Hashable, Sendable {
    /// The number of bytes in the partial file; the `Range` request asks for the bytes from here on.
    public var offset: Int64
    /// The strong `ETag` of the response the partial file came from, if it had one.
    public var entityTag: String?
    /// The `Last-Modified` value of the response the partial file came from, if it had one.
    public var lastModified: String?
    /// The length of the complete representation, when the interrupted response gave it.
    public var totalLength: Int64?

    /// Creates the description of a partial file.
    ///
    /// - Parameters:
    ///   - offset: The number of bytes in the partial file.
    ///   - entityTag: The interrupted response's `ETag`, if any.
    ///   - lastModified: The interrupted response's `Last-Modified` value, if any.
    ///   - totalLength: The complete length of the representation, if known; a negative value counts as unknown.
    public init(offset: Int64, entityTag: String?, lastModified: String?, totalLength: Int64? = nil) {
        self.offset = offset
        self.entityTag = entityTag
        self.lastModified = lastModified
        self.totalLength = totalLength.flatMap { $0 >= 0 ? $0 : nil }
    }

    /// Whether a 206 response is a range of the same representation the partial file holds.
    ///
    /// The validator compared is the one the resume request sent in `If-Range` (see ``ResumeRequestHeaders``): the
    /// strong entity tag when there is one, which the response must repeat exactly and as a strong tag; otherwise
    /// the `Last-Modified` date, which the response must repeat. A response without the validator cannot be shown
    /// to match and does not.
    ///
    /// - Parameter responseHeader: Returns the value of a response header field by name, or `nil`.
    public func isSameRepresentation(responseHeader: (String) -> String?) -> Bool {
        if let stored = entityTag.flatMap(EntityTag.strong) {
            guard let received = responseHeader("ETag").flatMap(EntityTag.strong) else { return false }
            return stored == received
        }
        if let stored = lastModified.map(HeaderParameters.trim), !stored.isEmpty {
            guard let received = responseHeader("Last-Modified").map(HeaderParameters.trim) else { return false }
            return stored == received
        }
        return false
    }
}
