import CourierHTTP
import Testing

@Suite("MethodRules and ContentCoding")
struct MethodAndCodingRulesTests {
    @Test(arguments: [
        ("GET", true), ("get", true), ("HEAD", true), ("PUT", true), ("DELETE", true), ("OPTIONS", true),
        ("TRACE", true), ("POST", false), ("PATCH", false), ("CONNECT", false), ("BREW", false),
    ])
    func idempotentMethods(method: String, idempotent: Bool) {
        #expect(MethodRules.isIdempotent(method) == idempotent)
    }

    @Test(arguments: [("POST", true), ("put", true), ("PATCH", true), ("GET", false), ("DELETE", false)])
    func emptyBodiesAnnounced(method: String, announced: Bool) {
        #expect(MethodRules.announcesEmptyBody(method) == announced)
        #expect(MethodRules.announcesBody(ofLength: 0, method: method) == announced)
        #expect(MethodRules.announcesBody(ofLength: 1, method: method))
    }

    /// Darwin's loader refuses a `GET` with a body and gives a `POST` body without a type the form type; the
    /// methods are compared as `URLRequest` stores them (upper case for these).
    @Test(
        arguments: [
            ("GET", true, nil), ("POST", false, "application/x-www-form-urlencoded"), ("PUT", false, nil),
            ("PATCH", false, nil), ("HEAD", false, nil), ("DELETE", false, nil),
        ] as [(String, Bool, String?)])
    func bodyRulesOfDarwinsLoader(method: String, refused: Bool, contentType: String?) {
        #expect(MethodRules.refusesBody(method) == refused)
        #expect(MethodRules.defaultContentType(method) == contentType)
    }

    @Test(arguments: [
        (["gzip"], ContentCoding.Decoding?.some(.gzip)), (["X-GZIP"], .gzip), (["deflate"], .deflate),
        (["br", "gzip"], .gzip), (["br, gzip"], .gzip), (["gzip", "br"], .brotli), (["gzip, identity"], .gzip),
        (["br"], .brotli), (["BR"], .brotli), (["deflate, br, identity"], .brotli), (["br, zstd"], nil),
        (["gzip, deflate"], .deflate), (["identity"], nil), ([], nil), ([""], nil), (["compress"], nil),
    ])
    func theOutermostCodingIsTheOneDecoded(values: [String], decoding: ContentCoding.Decoding?) {
        #expect(ContentCoding.automaticDecoding(values) == decoding)
    }

    /// A decoded body's Content-Length counts the coded bytes: the task's expected length is unknown then.
    @Test(
        arguments: [
            (1000, [], Int64(1000)), (1000, ["identity"], 1000), (1000, ["gzip"], -1), (1000, ["br"], -1),
            (1000, ["deflate, identity"], -1), (1000, ["zstd"], 1000), (-1, ["gzip"], -1),
        ] as [(Int64, [String], Int64)])
    func aDecodedBodysLengthIsUnknown(contentLength: Int64, codings: [String], expected: Int64) {
        #expect(ContentCoding.expectedDecodedLength(contentLength: contentLength, contentEncoding: codings) == expected)
    }
}
