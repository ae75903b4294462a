import Foundation
import Testing

@testable import Courier

/// The cache's pure parts above the RFC 9111 rules: `Vary` matching, the `304` merge, invalidation targets, and the
/// memory tier's LRU order.
@Suite("Cache stage rules")
struct CacheStageRulesTests {
    private func response(_ fields: [String: String], url: String = "https://a.test/x", status: Int = 200)
        -> HTTPURLResponse
    {
        HTTPURLResponse(url: URL(string: url)!, statusCode: status, httpVersion: "HTTP/1.1", headerFields: fields)!
    }

    private func request(_ fields: [String: String]) -> URLRequest {
        var request = URLRequest(url: URL(string: "https://a.test/x")!)
        for (name, value) in fields { request.setValue(value, forHTTPHeaderField: name) }
        return request
    }

    @Test func varyRecordsTheNamedFieldsAndMatchesOnlyEqualRequests() throws {
        let vary = response(["Vary": "Accept-Language, accept-encoding ,,"])
        let fields = try #require(
            CacheMetadata.varyingFields(of: vary, request: request(["Accept-Language": "en", "X-Other": "1"])))
        #expect(fields == ["accept-language": "en", "accept-encoding": String?.none])
        let metadata = CacheMetadata(requestTime: Date(), responseTime: Date(), varyingFields: fields)
        #expect(metadata.matches(request(["Accept-Language": "en"])))
        #expect(metadata.matches(request(["accept-language": "en", "X-Other": "2"])))
        #expect(!metadata.matches(request(["Accept-Language": "fr"])))
        #expect(!metadata.matches(request(["Accept-Language": "en", "Accept-Encoding": "gzip"])))
        #expect(CacheMetadata.varyingFields(of: response(["Vary": "*"]), request: request([:])) == nil)
        #expect(CacheMetadata.varyingFields(of: response([:]), request: request([:])) == [:])
    }

    /// A response that varies on `Cookie` or `Authorization` still answers only requests with the same values, but
    /// the values (a session cookie, a `.forSession` password) never reach `Cache.db`: only a keyed digest does.
    @Test func secretVaryingFieldsAreMatchedButNeverWrittenToDisk() throws {
        let secretCookie = "sessionid=s3cr3t-cookie-value"
        let secretAuthorization = "Basic " + Data("alice:s3cr3t-password".utf8).base64EncodedString()
        let fieldsSent = ["Cookie": secretCookie, "Authorization": secretAuthorization, "Accept-Language": "en"]
        let vary = response([
            "Vary": "Cookie, Authorization, Accept-Language", "Cache-Control": "public, max-age=600",
        ])
        let fields = try #require(CacheMetadata.varyingFields(of: vary, request: request(fieldsSent)))
        #expect((fields["accept-language"] ?? nil) == "en")
        let metadata = CacheMetadata(requestTime: Date(), responseTime: Date(), varyingFields: fields)
        #expect(metadata.matches(request(fieldsSent)))
        var otherCookie = fieldsSent
        otherCookie["Cookie"] = "sessionid=someone-else"
        #expect(!metadata.matches(request(otherCookie)))
        var noAuthorization = fieldsSent
        noAuthorization["Authorization"] = nil
        #expect(!metadata.matches(request(noAuthorization)))

        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("courier-vary-secrets-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = URLCache(memoryCapacity: 0, diskCapacity: 1 << 20, directory: directory)
        let cached = CachedURLResponse(
            response: vary, data: Data("body".utf8), userInfo: nil, storagePolicy: .allowed, metadata: metadata)
        cache.storeCachedResponse(cached, for: request(fieldsSent))
        let found = try #require(cache.cachedResponse(for: request(fieldsSent)))
        #expect(found.metadata?.matches(request(fieldsSent)) == true)
        var written = Data()
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
            written += try Data(contentsOf: directory.appendingPathComponent(name))
        }
        #expect(written.range(of: Data("body".utf8)) != nil)
        for secret in [secretCookie, secretAuthorization, String(secretAuthorization.dropFirst(6))] {
            #expect(written.range(of: Data(secret.utf8)) == nil)
        }
    }

    @Test func a304UpdatesTheStoredFieldsButNotTheFramingOrTheBody() throws {
        let stored = CachedURLResponse(
            response: response(["ETag": "\"1\"", "Content-Length": "4", "X-A": "old", "Cache-Control": "no-cache"]),
            data: Data("body".utf8))
        let notModified = response(
            ["ETag": "\"1\"", "X-A": "new", "Content-Length": "0", "Transfer-Encoding": "chunked"], status: 304)
        let refreshed = try #require(CacheStorageStage.refreshed(stored, by: notModified, requestTime: Date()))
        let http = try #require(refreshed.response as? HTTPURLResponse)
        #expect(http.statusCode == 200)
        #expect(http.value(forHTTPHeaderField: "X-A") == "new")
        #expect(http.value(forHTTPHeaderField: "Content-Length") == "4")
        #expect(http.value(forHTTPHeaderField: "Transfer-Encoding") == nil)
        #expect(http.value(forHTTPHeaderField: "Cache-Control") == "no-cache")
        #expect(refreshed.data == Data("body".utf8))
        #expect(refreshed.metadata != nil)
    }

    @Test func unsafeSuccessesInvalidateTheirURLAndSameOriginLocations() {
        func targets(_ method: String, status: Int = 200, _ fields: [String: String] = [:]) -> [String] {
            CacheInvalidationStage.invalidatedURLs(
                method: method, response: response(fields, url: "https://a.test/items/1", status: status)
            ).map(\.absoluteString)
        }
        #expect(targets("GET").isEmpty && targets("HEAD").isEmpty)
        #expect(targets("POST", status: 500).isEmpty)
        #expect(targets("DELETE") == ["https://a.test/items/1"])
        #expect(
            targets("POST", status: 201, ["Location": "/items/2", "Content-Location": "https://b.test/elsewhere"])
                == ["https://a.test/items/1", "https://a.test/items/2"])
        #expect(targets("PUT", ["Content-Location": "http://a.test/items/1"]) == ["https://a.test/items/1"])
        // The scheme's default port written out is the same origin.
        #expect(
            targets("PATCH", ["Location": "https://a.test:443/items/3"])
                == ["https://a.test/items/1", "https://a.test:443/items/3"])
    }

    @Test func theMemoryTierEvictsTheLeastRecentlyUsedInConstantTime() {
        func entry(_ cost: Int) -> MemoryCacheTier.Entry {
            .init(
                response: CachedURLResponse(response: response([:]), data: Data(count: cost)), cost: cost,
                stored: Date())
        }
        var tier = MemoryCacheTier(capacity: 30)
        tier.store(entry(10), for: "a")
        tier.store(entry(10), for: "b")
        tier.store(entry(10), for: "c")
        #expect(tier.keysByRecency == ["c", "b", "a"])
        _ = tier.entry(for: "a")
        #expect(tier.keysByRecency == ["a", "c", "b"])
        tier.store(entry(10), for: "d")
        #expect(tier.keysByRecency == ["d", "a", "c"])
        tier.store(entry(25), for: "e")
        #expect(tier.keysByRecency == ["e"] && tier.usage == 25)
        tier.store(entry(31), for: "too big")
        #expect(tier.keysByRecency == ["e"])
        tier.store(entry(5), for: "e")
        #expect(tier.usage == 5 && tier.count == 1)
        tier.capacity = 4
        #expect(tier.count == 0 && tier.usage == 0)
        // Many entries through a small tier: every slot is reused, nothing leaks.
        tier.capacity = 100
        for index in 0..<10_000 { tier.store(entry(10), for: "k\(index)") }
        #expect(tier.count == 10 && tier.usage == 100)
        #expect(tier.keysByRecency.first == "k9999")
    }
}
