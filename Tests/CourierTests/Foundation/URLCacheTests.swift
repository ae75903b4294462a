import Courier
import Foundation
import Testing

@Suite("URLCache")
struct URLCacheTests {
    private func request(_ path: String, method: String = "GET") throws -> URLRequest {
        var request = URLRequest(url: try #require(URL(string: "https://example.com/" + path)))
        request.httpMethod = method
        return request
    }

    private func cached(_ request: URLRequest, bytes: Int, policy: URLCache.StoragePolicy = .allowed) throws
        -> CachedURLResponse
    {
        let response = URLResponse(
            url: try #require(request.url), mimeType: "application/octet-stream", expectedContentLength: bytes,
            textEncodingName: nil)
        return CachedURLResponse(response: response, data: Data(count: bytes), storagePolicy: policy)
    }

    @Test("Store, look up and remove")
    func storeAndRemove() throws {
        let cache = URLCache(memoryCapacity: 10_000, diskCapacity: 0)
        let get = try request("a")
        cache.storeCachedResponse(try cached(get, bytes: 100), for: get)
        #expect(cache.cachedResponse(for: get)?.data.count == 100)
        #expect(cache.cachedResponse(for: try request("a", method: "POST")) == nil)
        #expect(cache.cachedResponse(for: try request("b")) == nil)
        #expect(cache.currentMemoryUsage >= 100)
        #expect(cache.currentDiskUsage == 0)
        cache.removeCachedResponse(for: get)
        #expect(cache.cachedResponse(for: get) == nil)
        #expect(cache.currentMemoryUsage == 0)
    }

    @Test("Least recently used entries are evicted to respect the memory capacity")
    func eviction() throws {
        let cache = URLCache(memoryCapacity: 1_000, diskCapacity: 0)
        let (a, b, c) = (try request("a"), try request("b"), try request("c"))
        cache.storeCachedResponse(try cached(a, bytes: 400), for: a)
        cache.storeCachedResponse(try cached(b, bytes: 400), for: b)
        #expect(cache.cachedResponse(for: a) != nil)
        cache.storeCachedResponse(try cached(c, bytes: 400), for: c)
        #expect(cache.cachedResponse(for: b) == nil)
        #expect(cache.cachedResponse(for: a) != nil)
        #expect(cache.cachedResponse(for: c) != nil)
        #expect(cache.currentMemoryUsage <= 1_000)

        cache.memoryCapacity = 500
        #expect(cache.currentMemoryUsage <= 500)
        #expect(cache.cachedResponse(for: c) != nil)
    }

    @Test("Oversized and not-allowed responses are not stored")
    func notStored() throws {
        let cache = URLCache(memoryCapacity: 1_000, diskCapacity: 0)
        let big = try request("big")
        let forbidden = try request("forbidden")
        cache.storeCachedResponse(try cached(big, bytes: 2_000), for: big)
        cache.storeCachedResponse(try cached(forbidden, bytes: 10, policy: .notAllowed), for: forbidden)
        #expect(cache.cachedResponse(for: big) == nil)
        #expect(cache.cachedResponse(for: forbidden) == nil)
        #expect(cache.currentMemoryUsage == 0)
    }

    @Test("Remove all and remove since a date")
    func bulkRemoval() throws {
        let cache = URLCache(memoryCapacity: 10_000, diskCapacity: 0)
        let (a, b) = (try request("a"), try request("b"))
        cache.storeCachedResponse(try cached(a, bytes: 10), for: a)
        let checkpoint = Date()
        cache.storeCachedResponse(try cached(b, bytes: 10), for: b)
        cache.removeCachedResponses(since: checkpoint)
        #expect(cache.cachedResponse(for: a) != nil)
        #expect(cache.cachedResponse(for: b) == nil)
        cache.removeAllCachedResponses()
        #expect(cache.cachedResponse(for: a) == nil)
        #expect(cache.currentMemoryUsage == 0)
    }

    @Test("Capacities and the replaceable shared cache")
    func capacities() {
        let cache = URLCache(memoryCapacity: 1, diskCapacity: 2, diskPath: nil)
        #expect(cache.memoryCapacity == 1)
        #expect(cache.diskCapacity == 2)
        let original = URLCache.shared
        URLCache.shared = cache
        #expect(URLCache.shared === cache)
        URLCache.shared = original
        #expect(URLCache.shared === original)
    }
}
