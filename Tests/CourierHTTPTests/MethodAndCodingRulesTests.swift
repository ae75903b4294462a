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
        (["gzip"], true), (["GZIP"], true), ([" deflate "], true), (["x-gzip"], true), (["br"], false),
        (["identity"], false), ([], false), (["br", "gzip"], true), (["compress"], false),
    ])
    func automaticallyDecodedCodings(values: [String], decoded: Bool) {
        #expect(ContentCoding.isDecodedAutomatically(values) == decoded)
    }
}
