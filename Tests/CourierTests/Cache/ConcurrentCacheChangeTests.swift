import Courier
import Dispatch
import Foundation
import Testing

/// `URLCache` is thread-safe: a lookup that runs while the app removes or replaces a response may answer with the old
/// one (the two calls overlapped), but once both returned the old response is gone for good. A lookup that missed
/// memory and read the disk just before the change used to put the old response back in memory after it, where
/// every later lookup (the session's among them) found it: a response removed at logout served again.
@Suite("URLCache under concurrent changes")
struct ConcurrentCacheChangeTests {
    /// Each round races one lookup against one change; the bad order comes in a good share of them.
    private static let rounds = 200

    private func folder() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("courier-cache-race-\(UUID().uuidString)")
    }

    private func response(_ body: String, for request: URLRequest) throws -> CachedURLResponse {
        let url = try #require(request.url)
        let head = try #require(
            HTTPURLResponse(
                url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: ["Content-Type": "text/plain"]))
        return CachedURLResponse(response: head, data: Data(body.utf8))
    }

    @Test(arguments: ["removed", "replaced"])
    func aLookupRacingAChangeNeverBringsTheOldResponseBack(_ change: String) throws {
        let directory = folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = URLCache(memoryCapacity: 1_000_000, diskCapacity: 10_000_000, directory: directory)
        let request = URLRequest(url: try #require(URL(string: "https://example.test/account")))
        let old = try response("old", for: request)
        let new = try response("new", for: request)
        var stale = 0
        for _ in 0..<Self.rounds {
            // On disk only, so that the racing lookup misses memory and reads the disk.
            cache.memoryCapacity = 0
            cache.storeCachedResponse(old, for: request)
            cache.memoryCapacity = 1_000_000
            DispatchQueue.concurrentPerform(iterations: 2) { index in
                if index == 0 {
                    _ = cache.cachedResponse(for: request)
                } else if change == "removed" {
                    cache.removeCachedResponse(for: request)
                } else {
                    cache.storeCachedResponse(new, for: request)
                }
            }
            let found = cache.cachedResponse(for: request)?.data
            if found != (change == "removed" ? nil : new.data) { stale += 1 }
            cache.removeAllCachedResponses()
        }
        #expect(stale == 0, "the old response came back in \(stale) of \(Self.rounds) rounds")
    }
}
