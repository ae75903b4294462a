/// The header fields a download engine adds to a request to resume a download.
public enum ResumeRequestHeaders {
    /// The `Range` and `If-Range` fields that resume a download safely at `offset`, or `nil` when it cannot be
    /// resumed safely.
    ///
    /// `If-Range` makes the server send the whole representation (200) instead of a range when the resource changed
    /// since the partial file was written. RFC 9110 §13.1.5 forbids a weak entity tag (`W/"…"`) there, so the
    /// validator is chosen as follows:
    /// 1. a well-formed strong entity tag;
    /// 2. otherwise, when there is no entity tag at all, the `Last-Modified` date (RFC 9110 §13.1.5: a client sends
    ///    a date only when it has no entity tag; ``Resumability`` keeps a date only when it is a strong validator);
    /// 3. otherwise `nil` (a weak or malformed entity tag, or no validator): a range could be spliced onto a
    ///    different version of the resource.
    ///
    /// A validator containing control characters is treated as absent, so it can never inject header fields.
    ///
    /// - Parameters:
    ///   - offset: The number of bytes already in the partial file; must be positive (`nil` otherwise, as there is
    ///     nothing to resume).
    ///   - entityTag: The `ETag` of the interrupted response, if any.
    ///   - lastModified: The `Last-Modified` value of the interrupted response, if any.
    /// - Returns: `Range: bytes=<offset>-` and `If-Range: <validator>`, in that order, or `nil`.
    public static func fields(
        resumingAt offset: Int64,
        entityTag: String?,
        lastModified: String?
    ) -> HeaderFieldDictionary? {
        guard offset > 0, let validator = validator(entityTag: entityTag, lastModified: lastModified) else {
            return nil
        }
        return HeaderFieldDictionary(pairs: [("Range", "bytes=\(offset)-"), ("If-Range", validator)])
    }

    /// The value to send in `If-Range`: the strong entity tag if there is one, else (no entity tag at all) the
    /// `Last-Modified` date.
    static func validator(entityTag: String?, lastModified: String?) -> String? {
        if let entityTag, FieldText.hasNoControlCharacters(entityTag), let strong = EntityTag.strong(entityTag) {
            return strong
        }
        // A weak or malformed entity tag (resume data written elsewhere) is still an entity tag: no date then.
        if let entityTag, !HeaderParameters.trim(entityTag).isEmpty { return nil }
        if let lastModified, FieldText.hasNoControlCharacters(lastModified) {
            let date = HeaderParameters.trim(lastModified)
            return date.isEmpty ? nil : date
        }
        return nil
    }
}
