/// Content codings (RFC 9110 §8.4) the client decodes for the app.
public enum ContentCoding {
    /// Whether a response with these `Content-Encoding` values is decoded automatically: gzip (and its old name
    /// x-gzip) and deflate, the codings the client offers in `Accept-Encoding`.
    public static func isDecodedAutomatically<S: Sequence>(_ values: S) -> Bool where S.Element == String {
        values.contains { value in
            switch HeaderName.canonical(HeaderParameters.trim(value)) {
            case "gzip", "x-gzip", "deflate": return true
            default: return false
            }
        }
    }
}
