import CourierHTTP
import Foundation
import Testing

@Suite("Cache-Control")
struct CacheControlTests {
    @Test func directivesAreRead() {
        let control = CacheControl([
            "no-cache, max-age=60, Private",
            "must-revalidate, max-stale, min-fresh=5, only-if-cached, x-unknown=\"a,b\"",
        ])
        #expect(control.noCache && control.isPrivate && control.mustRevalidate && control.onlyIfCached)
        #expect(control.maxAge == 60 && control.maxStale == Int.max && control.minFresh == 5)
        #expect(!control.noStore && !control.isPublic)
    }

    @Test(arguments: [
        ("max-age=99999999999999999999", CacheControl.maximumSeconds),  // overflow: 2^31
        ("max-age=-1", 0), ("max-age=abc", 0), ("max-age", 0), ("max-age=\"30\"", 30),  // invalid: stale
        ("max-age=10, max-age=20", 0),  // repeated: stale
        ("max-age=10, max-age=\"unterminated", 0),  // a malformed second value: stale
        ("max-age = 7", 7),
    ])
    func hostileMaxAges(field: String, expected: Int) {
        #expect(CacheControl([field]).maxAge == expected)
    }

    @Test func controlCharactersAndGarbageAreIgnored() {
        #expect(
            CacheControl(["no-store\u{0}, public"])
                == {
                    var c = CacheControl()
                    c.isPublic = true
                    return c
                }())
        #expect(CacheControl([",,, ,", "=", "\"quoted\""]) == CacheControl())
    }
}

@Suite("Cache rules")
struct CacheRulesTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func http(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }

    /// A response received `receivedAgo` seconds before `now`, dated then.
    static func stored(
        _ headers: [(String, String)], status: Int = 200, receivedAgo: TimeInterval = 100
    ) -> StoredResponse {
        let received = now.addingTimeInterval(-receivedAgo)
        var fields = HeaderFieldDictionary(pairs: headers)
        if fields["Date"] == nil { fields["Date"] = http(received) }
        return StoredResponse(
            status: status, headers: fields, requestTime: received.addingTimeInterval(-1), responseTime: received)
    }

    struct Row: Sendable, CustomTestStringConvertible {
        let name: String
        let request: [(String, String)]
        let response: [(String, String)]?
        let expected: CacheDecision
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "nothing stored", request: [], response: nil, expected: .network),
        Row(
            name: "nothing stored, only-if-cached", request: [("Cache-Control", "only-if-cached")], response: nil,
            expected: .unsatisfiable),
        Row(name: "fresh by max-age", request: [], response: [("Cache-Control", "max-age=3600")], expected: .useStored),
        Row(
            name: "stale by max-age, etag", request: [],
            response: [("Cache-Control", "max-age=10"), ("ETag", "\"v1\"")],
            expected: .validate(ifNoneMatch: "\"v1\"", ifModifiedSince: nil)),
        Row(name: "stale, no validators", request: [], response: [("Cache-Control", "max-age=10")], expected: .network),
        Row(
            name: "fresh by Expires", request: [],
            response: [("Expires", http(now.addingTimeInterval(3600)))], expected: .useStored),
        Row(name: "invalid Expires is stale", request: [], response: [("Expires", "0")], expected: .network),
        Row(
            name: "heuristic: 10% of Last-Modified age", request: [],
            response: [("Last-Modified", http(now.addingTimeInterval(-100_000)))], expected: .useStored),
        Row(
            name: "heuristic too short", request: [],
            response: [("Last-Modified", http(now.addingTimeInterval(-600)))],
            expected: .validate(ifNoneMatch: nil, ifModifiedSince: http(now.addingTimeInterval(-600)))),
        Row(
            name: "Age counts", request: [], response: [("Cache-Control", "max-age=150"), ("Age", "100")],
            expected: .network),
        Row(
            name: "response no-cache revalidates", request: [],
            response: [("Cache-Control", "no-cache, max-age=3600"), ("ETag", "\"e\"")],
            expected: .validate(ifNoneMatch: "\"e\"", ifModifiedSince: nil)),
        Row(
            name: "request no-cache revalidates", request: [("Cache-Control", "no-cache")],
            response: [("Cache-Control", "max-age=3600"), ("ETag", "\"e\"")],
            expected: .validate(ifNoneMatch: "\"e\"", ifModifiedSince: nil)),
        Row(
            name: "Pragma no-cache without Cache-Control", request: [("Pragma", "no-cache")],
            response: [("Cache-Control", "max-age=3600")], expected: .network),
        Row(
            name: "request max-age shorter than the age", request: [("Cache-Control", "max-age=50")],
            response: [("Cache-Control", "max-age=3600")], expected: .network),
        Row(
            name: "min-fresh beyond what is left", request: [("Cache-Control", "min-fresh=3550")],
            response: [("Cache-Control", "max-age=3600")], expected: .network),
        Row(
            name: "max-stale accepts a stale response", request: [("Cache-Control", "max-stale=1000")],
            response: [("Cache-Control", "max-age=10")], expected: .useStored),
        Row(
            name: "must-revalidate overrides max-stale", request: [("Cache-Control", "max-stale")],
            response: [("Cache-Control", "max-age=10, must-revalidate")], expected: .network),
        Row(
            name: "only-if-cached and stale", request: [("Cache-Control", "only-if-cached")],
            response: [("Cache-Control", "max-age=10"), ("ETag", "\"e\"")], expected: .unsatisfiable),
    ]

    @Test(arguments: rows)
    func decisions(_ row: Row) {
        let stored = row.response.map { Self.stored($0) }
        #expect(
            CacheRules.decide(requestHeaders: HeaderFieldDictionary(pairs: row.request), stored: stored, now: Self.now)
                == row.expected)
    }

    @Test func agesFollowRFC9111() {
        // Apparent age from Date, corrected by Age and the response delay, plus the time resident.
        let received = Self.now.addingTimeInterval(-100)
        let response = StoredResponse(
            status: 200,
            headers: HeaderFieldDictionary(pairs: [
                ("Date", Self.http(received.addingTimeInterval(-30))), ("Age", "10"),
            ]),
            requestTime: received.addingTimeInterval(-2), responseTime: received)
        #expect(CacheRules.currentAge(of: response, now: Self.now) == 130)
    }

    @Test(
        arguments: [
            ("GET", [], 200, [], true), ("POST", [], 200, [("Cache-Control", "max-age=60")], false),
            ("GET", [], 206, [("Cache-Control", "max-age=60")], false),
            ("GET", [], 200, [("Cache-Control", "no-store")], false),
            ("GET", [("Cache-Control", "no-store")], 200, [], false),
            ("GET", [("Authorization", "Basic x")], 200, [("Cache-Control", "max-age=60")], false),
            ("GET", [("Authorization", "Basic x")], 200, [("Cache-Control", "public, max-age=60")], true),
            ("GET", [], 500, [], false), ("GET", [], 500, [("Cache-Control", "max-age=60")], true),
            ("GET", [], 404, [], true),
        ] as [(String, [(String, String)], Int, [(String, String)], Bool)])
    func storability(
        method: String, request: [(String, String)], status: Int, response: [(String, String)], expected: Bool
    ) {
        #expect(
            CacheRules.isStorable(
                method: method, requestHeaders: HeaderFieldDictionary(pairs: request), status: status,
                responseHeaders: HeaderFieldDictionary(pairs: response)) == expected)
    }
}
