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
            "Connection", "HOST", "Proxy-Authenticate", "proxy-authorization", "WWW-Authenticate",
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

    /// Darwin sends a session's `Authorization` (Alamofire's tests set a bearer token that way).
    @Test("A session's Authorization is added; excluded names are not")
    func authorizationAddedUnlessExcluded() {
        let additional = [("Authorization", "Bearer session"), ("Cookie", "a=1"), ("X-Kept", "y")]
        let merged = AdditionalHeaderMerge.merge(additional: additional, into: [:])
        #expect(merged["authorization"] == "Bearer session")
        #expect(merged["cookie"] == "a=1")
        let excluding = AdditionalHeaderMerge.merge(
            additional: additional, into: [:], excluding: ["AUTHORIZATION", "cookie"])
        #expect(excluding.names == ["X-Kept"])
    }

    @Test(
        "Ordinary names are not reserved", arguments: ["Accept", "Hosts", "X-Authorization", "Cookie", "Authorization"])
    func notReserved(name: String) {
        #expect(!AdditionalHeaderMerge.isReserved(name))
    }
}
