import CourierHTTP
import Testing

@Suite("TransferCodingRules")
struct TransferCodingRulesTests {
    @Test(arguments: [
        ([String](), nil as String?), (["chunked"], nil), ([" Chunked "], nil), (["identity"], nil),
        (["gzip"], "gzip"), (["gzip, chunked"], "gzip"), (["chunked", "x-custom"], "x-custom"), ([" , "], nil),
    ])
    func unrequestedCodings(values: [String], expected: String?) {
        #expect(TransferCodingRules.unrequestedCoding(in: values) == expected)
    }

    @Test(arguments: [
        ([String](), true), (["trailers"], true), ([" Trailers "], true), (["gzip"], false),
        (["trailers, deflate"], false), ([""], false), (["chunked"], false),
    ])
    func teOnHTTP2(values: [String], fits: Bool) {
        #expect(TransferCodingRules.fitsHTTP2(te: values) == fits)
    }
}
