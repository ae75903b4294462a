/// Content codings (RFC 9110 §8.4) the client decodes for the app.
public enum ContentCoding {
    /// A content coding the client decodes itself.
    public enum Decoding: Sendable, Hashable {
        /// gzip (RFC 1952), also sent under its old name x-gzip.
        case gzip
        /// deflate: the zlib format (RFC 1950); raw deflate data (RFC 1951) is accepted too, as browsers do.
        case deflate
        /// Brotli (RFC 7932), sent as `br`.
        case brotli
    }

    /// The coding to decode for a response with these `Content-Encoding` values, or `nil` to deliver the body as
    /// it is: the outermost coding (the last one listed, RFC 9110 §8.4), ignoring `identity`, when it is gzip,
    /// x-gzip, deflate or br, the codings the client offers in `Accept-Encoding`. Only that one layer is decoded.
    public static func automaticDecoding(_ values: [String]) -> Decoding? {
        // Loops rather than flatMap/map/filter: every response asks, most have no Content-Encoding at all, and the
        // chained generic calls cost more than the answer. An array, not a generic sequence: the transport would run
        // a generic function unspecialised, with runtime metadata lookups.
        var outermost: String?
        for value in values {
            for listed in value.split(separator: ",") {
                let coding = HeaderName.canonical(HeaderParameters.trim(listed))
                if !coding.isEmpty && coding != "identity" { outermost = coding }
            }
        }
        switch outermost {
        case "gzip", "x-gzip": return .gzip
        case "deflate": return .deflate
        case "br": return .brotli
        default: return nil
        }
    }

    /// The body length a task can expect from a response's `Content-Length` (`-1` when it has none): that length,
    /// or `-1` (`NSURLSessionTransferSizeUnknown`) when the body is decoded on the way (``automaticDecoding(_:)``).
    /// `Content-Length` then counts the coded bytes while the task counts and delivers the decoded ones, so it
    /// promises nothing about them: Darwin reports the length of a compressed response as unknown
    /// (`countOfBytesExpectedToReceive`, `totalBytesExpectedToWrite`), as FoundationNetworking does.
    public static func expectedDecodedLength(contentLength: Int64, contentEncoding: [String]) -> Int64 {
        automaticDecoding(contentEncoding) == nil ? contentLength : -1
    }
}

extension ContentCoding {
    /// The default limit on how many times larger a decoded body may be than the compressed bytes received.
    ///
    /// deflate (which gzip wraps) cannot do better than about 1,032:1 — a 258-byte match costs at least two
    /// bits; brotli can go much further (long repeats cost next to nothing). Real content (text, JSON, HTML) stays
    /// far below 1,000:1 in either; only data that is almost entirely one repeated byte comes close — the shape of
    /// a decompression bomb, a megabyte on the wire that inflates to a gigabyte. 1,000:1 stops those and lets
    /// everything else through; an app that downloads such data on purpose (sparse images, say) raises the limit
    /// or turns it off.
    public static let defaultMaximumDecompressionRatio = 1_000
}
