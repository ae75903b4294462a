/// The rules for the `Transfer-Encoding` and `TE` fields that the transport applies (RFC 9112 §6.1, §7; RFC 9113
/// §8.2.2): Courier offers no transfer coding but chunked, so it accepts no other in a response, and HTTP/2 carries
/// `TE` only as `trailers`.
public enum TransferCodingRules {
    /// The codings a `Transfer-Encoding` or `TE` field value lists, lowercased, in order, without empty elements.
    public static func codings(_ value: String) -> [String] {
        value.split(separator: ",").map { HeaderParameters.trim($0).lowercased() }.filter { !$0.isEmpty }
    }

    /// The first coding of a response's `Transfer-Encoding` values that the client did not ask for (anything but
    /// chunked: no `TE` field is sent), or `nil`. `identity` (obsolete, RFC 7230 dropped it) means no coding: the
    /// body is read until the close, as llhttp and curl do.
    public static func unrequestedCoding(in values: [String]) -> String? {
        // Every HTTP/1.1 response passes here, most with no field or `chunked`: a plain loop over an array, not a
        // generic lazy chain, which the transport ran unspecialised (metadata lookups for every response).
        for value in values {
            if let coding = codings(value).first(where: { $0 != "chunked" && $0 != "identity" }) { return coding }
        }
        return nil
    }

    /// Whether a request's `TE` values may go on an HTTP/2 stream: only `trailers` may (RFC 9113 §8.2.2); any other
    /// value makes NIOHTTP2 refuse the request's HEADERS. `TE` is hop-by-hop, so the field is dropped instead.
    public static func fitsHTTP2(te values: [String]) -> Bool {
        values.allSatisfy { codings($0) == ["trailers"] }
    }
}
