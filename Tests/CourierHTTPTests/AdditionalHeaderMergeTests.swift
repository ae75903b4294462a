import CourierHTTP
import Testing

@Suite("AdditionalHeaderMerge")
struct AdditionalHeaderMergeTests {
    @Test("Additional headers fill in missing names only")
    func fillsMissing() {
        let request: HeaderFieldDictionary = ["Accept": "application/json"]
        let merged = AdditionalHeaderMerge.merge(
            additional: [("accept", "text/html"), ("User-Agent", "Courier"), ("X-Trace", "1")], into: request)
        #expect(merged["Accept"] == "application/json")
        #expect(merged["user-agent"] == "Courier")
        #expect(merged.names == ["Accept", "User-Agent", "X-Trace"])
    }

    @Test(
        "Reserved names are dropped",
        arguments: [
            "Authorization", "authorization", "Connection", "HOST", "Proxy-Authenticate", "proxy-authorization",
            "WWW-Authenticate",
        ])
    func reservedDropped(name: String) {
        let merged = AdditionalHeaderMerge.merge(additional: [(name, "x"), ("X-Kept", "y")], into: [:])
        #expect(merged[name] == nil)
        #expect(merged["X-Kept"] == "y")
        #expect(AdditionalHeaderMerge.isReserved(name))
    }

    @Test("A request's own reserved header is kept")
    func requestReservedKept() {
        let merged = AdditionalHeaderMerge.merge(
            additional: [("Authorization", "Basic session")], into: ["Authorization": "Bearer mine"])
        #expect(merged["authorization"] == "Bearer mine")
        #expect(merged.count == 1)
    }

    @Test("Ordinary names are not reserved", arguments: ["Accept", "Hosts", "X-Authorization", "Cookie"])
    func notReserved(name: String) {
        #expect(!AdditionalHeaderMerge.isReserved(name))
    }
}
