import Courier
import CourierStore
import Foundation
import Testing

/// The disk tier of `URLCache`: what survives a new cache object on the same folder, eviction by disk capacity, the
/// files' permissions, and the folders and files that go wrong.
@Suite("Disk cache")
struct DiskCacheTests {
    private func folder() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("courier-disk-cache-\(UUID().uuidString)")
    }

    private func cached(_ path: String, bytes: Int, policy: URLCache.StoragePolicy = .allowed) throws -> (
        URLRequest, CachedURLResponse
    ) {
        let url = try #require(URL(string: "https://example.test/\(path)"))
        let response = try #require(
            HTTPURLResponse(
                url: url, statusCode: 200, httpVersion: "HTTP/1.1",
                headerFields: ["Content-Type": "text/plain", "ETag": "\"\(path)\""]))
        let data = Data((0..<bytes).map { UInt8(truncatingIfNeeded: $0) })
        return (URLRequest(url: url), CachedURLResponse(response: response, data: data, storagePolicy: policy))
    }

    private func mode(_ path: String) throws -> Int {
        try (FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) ?? -1
    }

    @Test func responsesOutliveTheCacheObjectInAPrivateFolder() throws {
        let directory = folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (request, response) = try cached("a", bytes: 1000)
        let (memoryOnlyRequest, memoryOnly) = try cached("m", bytes: 10, policy: .allowedInMemoryOnly)
        do {
            let cache = URLCache(memoryCapacity: 100_000, diskCapacity: 1_000_000, directory: directory)
            cache.storeCachedResponse(response, for: request)
            cache.storeCachedResponse(memoryOnly, for: memoryOnlyRequest)
            #expect(cache.currentDiskUsage > 1000)
        }
        let reopened = URLCache(memoryCapacity: 100_000, diskCapacity: 1_000_000, directory: directory)
        #expect(reopened.currentMemoryUsage == 0)
        let found = try #require(reopened.cachedResponse(for: request))
        #expect(found.data == response.data)
        let http = try #require(found.response as? HTTPURLResponse)
        #expect(http.statusCode == 200 && http.value(forHTTPHeaderField: "ETag") == "\"a\"")
        #expect(reopened.currentMemoryUsage > 0)
        #expect(reopened.cachedResponse(for: memoryOnlyRequest) == nil)
        #expect(try mode(directory.path) == 0o700)
        #expect(try mode(directory.appendingPathComponent("Cache.db").path) == 0o600)
    }

    /// `Cache.db` outlives the process: a password in a URL and a session cookie must not reach it. The response to
    /// a URL with a password stays in memory; the disk copy of a response leaves its `Set-Cookie` out (the memory
    /// copy keeps it).
    @Test func noPasswordOrCookieReachesTheDisk() throws {
        let directory = folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let withPassword = try #require(URL(string: "https://alice:SECRET-PASSWORD@example.test/p"))
        let withCookie = try #require(URL(string: "https://example.test/c"))
        func response(_ url: URL, _ fields: [String: String]) throws -> CachedURLResponse {
            let http = try #require(
                HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: fields))
            return CachedURLResponse(response: http, data: Data("body".utf8))
        }
        let cache = URLCache(memoryCapacity: 100_000, diskCapacity: 1_000_000, directory: directory)
        cache.storeCachedResponse(
            try response(withPassword, ["ETag": "\"p\""]), for: URLRequest(url: withPassword))
        cache.storeCachedResponse(
            try response(withCookie, ["ETag": "\"c\"", "Set-Cookie": "sid=SECRET-COOKIE; HttpOnly"]),
            for: URLRequest(url: withCookie))
        let inMemory = cache.cachedResponse(for: URLRequest(url: withCookie))?.response as? HTTPURLResponse
        #expect(inMemory?.value(forHTTPHeaderField: "Set-Cookie") == "sid=SECRET-COOKIE; HttpOnly")
        #expect(cache.cachedResponse(for: URLRequest(url: withPassword)) != nil)

        var written = Data()
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
            written += try Data(contentsOf: directory.appendingPathComponent(name))
        }
        #expect(written.count > 0)
        #expect(written.range(of: Data("SECRET-PASSWORD".utf8)) == nil)
        #expect(written.range(of: Data("SECRET-COOKIE".utf8)) == nil)

        let reopened = URLCache(memoryCapacity: 100_000, diskCapacity: 1_000_000, directory: directory)
        #expect(reopened.cachedResponse(for: URLRequest(url: withPassword)) == nil)
        let fromDisk = try #require(reopened.cachedResponse(for: URLRequest(url: withCookie)))
        let http = try #require(fromDisk.response as? HTTPURLResponse)
        #expect(
            http.value(forHTTPHeaderField: "ETag") == "\"c\"" && http.value(forHTTPHeaderField: "Set-Cookie") == nil)
    }

    @Test func theDiskCapacityEvictsTheLeastRecentlyUsed() throws {
        let directory = folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = URLCache(memoryCapacity: 0, diskCapacity: 25_000, directory: directory)
        let entries = try (0..<3).map { try cached("e\($0)", bytes: 10_000) }
        cache.storeCachedResponse(entries[0].1, for: entries[0].0)
        cache.storeCachedResponse(entries[1].1, for: entries[1].0)
        #expect(cache.cachedResponse(for: entries[0].0) != nil)  // e0 is now more recent than e1
        cache.storeCachedResponse(entries[2].1, for: entries[2].0)
        #expect(cache.cachedResponse(for: entries[1].0) == nil)
        #expect(cache.cachedResponse(for: entries[0].0) != nil)
        #expect(cache.cachedResponse(for: entries[2].0) != nil)
        #expect(cache.currentDiskUsage <= 25_000)
        cache.diskCapacity = 12_000
        #expect(cache.currentDiskUsage <= 12_000)
        let since = Date()
        let (late, lateResponse) = try cached("late", bytes: 10)
        cache.storeCachedResponse(lateResponse, for: late)
        cache.removeCachedResponses(since: since)
        #expect(cache.cachedResponse(for: late) == nil)
        cache.removeAllCachedResponses()
        #expect(cache.currentDiskUsage == 0)
    }

    /// What an earlier run stored is on disk before this run uses the cache: it is measured at once, and turning the
    /// disk cache off (`diskCapacity = 0`) and clearing it at launch removes it. A cache that never had a disk
    /// capacity (an ephemeral session's, which shares the default folder) leaves it alone.
    @Test func anEarlierRunsResponsesAreMeasuredAndRemovedBeforeFirstUse() throws {
        let directory = folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (request, response) = try cached("earlier", bytes: 1000)
        let (other, otherResponse) = try cached("other", bytes: 1000)
        func storeInAnEarlierRun() {
            let cache = URLCache(memoryCapacity: 0, diskCapacity: 1_000_000, directory: directory)
            cache.storeCachedResponse(response, for: request)
            cache.storeCachedResponse(otherResponse, for: other)
        }
        func isOnDisk(_ request: URLRequest) -> Bool {
            URLCache(memoryCapacity: 0, diskCapacity: 1_000_000, directory: directory)
                .cachedResponse(for: request) != nil
        }
        storeInAnEarlierRun()
        let ephemeral = URLCache(memoryCapacity: 0, diskCapacity: 0, directory: directory)
        #expect(ephemeral.currentDiskUsage == 0)
        ephemeral.removeAllCachedResponses()
        #expect(isOnDisk(request) && isOnDisk(other))

        let relaunched = URLCache(memoryCapacity: 0, diskCapacity: 1_000_000, directory: directory)
        #expect(relaunched.currentDiskUsage > 2000)
        relaunched.diskCapacity = 0
        relaunched.removeAllCachedResponses()
        #expect(relaunched.currentDiskUsage == 0)
        #expect(!isOnDisk(request) && !isOnDisk(other))

        storeInAnEarlierRun()
        let shrunk = URLCache(memoryCapacity: 0, diskCapacity: 1_000_000, directory: directory)
        shrunk.diskCapacity = 1500
        #expect(shrunk.currentDiskUsage <= 1500)
        #expect(!(isOnDisk(request) && isOnDisk(other)))
    }

    @Test func aCorruptDatabaseIsMovedAsideAndReplaced() throws {
        let directory = folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(
            at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let database = directory.appendingPathComponent("Cache.db")
        try Data(repeating: 0x5A, count: 8192).write(to: database)
        let cache = URLCache(memoryCapacity: 0, diskCapacity: 1_000_000, directory: directory)
        let (request, response) = try cached("c", bytes: 100)
        cache.storeCachedResponse(response, for: request)
        #expect(cache.cachedResponse(for: request)?.data == response.data)
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(names.contains { $0.hasPrefix("Cache.db.corrupt-") })
    }

    @Test func aFolderSharedWithOthersLeavesTheCacheInMemory() throws {
        try checkCacheStaysInMemory(folderMode: 0o777)
    }

    @Test(.enabled(if: geteuid() != 0, "root writes into a read-only folder"))
    func aReadOnlyFolderLeavesTheCacheInMemory() throws {
        try checkCacheStaysInMemory(folderMode: 0o500)
    }

    /// A cache whose folder has `folderMode` keeps what it stores in memory and writes nothing there.
    private func checkCacheStaysInMemory(folderMode: mode_t) throws {
        let directory = folder()
        defer {
            chmod(directory.path, 0o700)
            try? FileManager.default.removeItem(at: directory)
        }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        chmod(directory.path, folderMode)
        let cache = URLCache(memoryCapacity: 100_000, diskCapacity: 1_000_000, directory: directory)
        let (request, response) = try cached("r", bytes: 100)
        cache.storeCachedResponse(response, for: request)
        #expect(cache.cachedResponse(for: request)?.data == response.data)
        #expect(cache.currentDiskUsage == 0)
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("Cache.db").path))
    }

    @Test func aRelativeDiskPathLivesUnderTheDefaultFolder() throws {
        #expect(
            StoreLocation.cacheFolder(environment: ["XDG_CACHE_HOME": "/var/cache-test", "HOME": "/home/u"]).path
                == "/var/cache-test/\(StoreLocation.applicationName)/courier")
        #expect(
            StoreLocation.cacheFolder(environment: ["XDG_CACHE_HOME": "relative", "HOME": "/home/u"]).path
                == "/home/u/.cache/\(StoreLocation.applicationName)/courier")
        #expect(
            StoreLocation.dataFolder(environment: ["HOME": "/home/u"]).path
                == "/home/u/.local/share/\(StoreLocation.applicationName)/courier")
    }
}
