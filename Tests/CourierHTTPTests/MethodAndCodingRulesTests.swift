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
}
