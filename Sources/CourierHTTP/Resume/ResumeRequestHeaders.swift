/// The header fields a download engine adds to a request to resume a download.
public enum ResumeRequestHeaders {
    /// The `Range` and `If-Range` fields that resume a download safely at `offset`, or `nil` when it cannot be
    /// resumed safely.
    ///
    /// `If-Range` makes the server send the whole representation (200) instead of a range when the resource changed
    /// since the partial file was written. RFC 9110 §13.1.5 forbids a weak entity tag (`W/"…"`) there, so the
    /// validator is chosen as follows:
    /// 1. a well-formed strong entity tag;
    /// 2. otherwise (no entity tag, a weak one, or a malformed one) the `Last-Modified` date;
    /// 3. otherwise `nil`: without a validator a range could be spliced onto a different version of the resource.
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

    /// The value to send in `If-Range`: the strong entity tag if there is one, else the `Last-Modified` date.
    static func validator(entityTag: String?, lastModified: String?) -> String? {
        if let entityTag, FieldText.hasNoControlCharacters(entityTag), let strong = EntityTag.strong(entityTag) {
            return strong
        }
        if let lastModified, FieldText.hasNoControlCharacters(lastModified) {
            let date = HeaderParameters.trim(lastModified)
            return date.isEmpty ? nil : date
        }
        return nil
    }
}
