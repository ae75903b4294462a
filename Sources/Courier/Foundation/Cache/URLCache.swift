import CourierStore
import Foundation
import Logging
import NIOConcurrencyHelpers

/// An object that maps URL requests to cached responses, in memory and on disk.
///
/// Entries are keyed by the request's method and URL. The memory tier keeps the most recently used responses within
/// ``memoryCapacity``; the disk tier (a SQLite database, `Cache.db`, in the cache's directory) keeps responses whose
/// storage policy is ``StoragePolicy/allowed`` within ``diskCapacity``, least recently used first out. Processes
/// that use the same directory share the disk tier. A cache with a disk capacity of 0 (an ephemeral session's) never
/// touches the disk. A directory that cannot be used (read-only, not private) leaves the cache memory-only, with one
/// logged warning.
///
/// The default directory is `$XDG_CACHE_HOME/<application>/courier/` (`~/.cache/<application>/courier/`). Disk
/// calls block: sessions make them off the event loops. The user info of a cached response is kept in memory only.
///
/// Secrets stay out of `Cache.db`, which outlives the process: a response to a URL that carries a password
/// (`https://user:password@host/`) is kept in memory only, and the disk copy of a response leaves out its
/// `Set-Cookie` fields (a session cookie the cookie jar never writes down; a response from the cache never sets
/// cookies again, so only its header fields show the difference).
open class URLCache: NSObject, @unchecked Sendable {
    private let memory: NIOLockedValueBox<MemoryCacheTier>
    private let disk: DiskCacheTier
    /// Held across a change (its memory and disk steps) and across a memory miss's disk read and the copy it keeps
    /// in memory: otherwise a lookup that read the disk just before a removal (or a replacement) put the old response
    /// back in memory after the change, where every later lookup found it. The disk tier runs one call at a time
    /// anyway (each read also records its use), so this costs lookups no parallelism; memory hits never take it.
    private let changes = NIOLock()

    /// Creates a cache with the given capacities.
    ///
    /// - Parameters:
    ///   - memoryCapacity: The memory capacity of the cache, in bytes.
    ///   - diskCapacity: The disk capacity of the cache, in bytes; 0 keeps the cache in memory.
    ///   - directory: The directory of the disk cache; `nil` uses the default, under `$XDG_CACHE_HOME`.
    public init(memoryCapacity: Int, diskCapacity: Int, directory: URL? = nil) {
        memory = NIOLockedValueBox(MemoryCacheTier(capacity: max(0, memoryCapacity)))
        disk = DiskCacheTier(folder: directory ?? StoreLocation.cacheFolder(), capacity: max(0, diskCapacity))
        super.init()
    }

    /// Creates a cache with the given capacities and disk path.
    ///
    /// - Parameters:
    ///   - memoryCapacity: The memory capacity of the cache, in bytes.
    ///   - diskCapacity: The disk capacity of the cache, in bytes; 0 keeps the cache in memory.
    ///   - path: The directory of the disk cache: an absolute path as is, a relative one under the default
    ///     directory (`$XDG_CACHE_HOME/<application>/courier/`), `nil` for the default directory.
    public convenience init(memoryCapacity: Int, diskCapacity: Int, diskPath path: String?) {
        let directory = path.map { path in
            path.hasPrefix("/")
                ? URL(fileURLWithPath: path, isDirectory: true)
                : StoreLocation.cacheFolder().appendingPathComponent(path, isDirectory: true)
        }
        self.init(memoryCapacity: memoryCapacity, diskCapacity: diskCapacity, directory: directory)
    }

    /// The shared cache of the process. It can be replaced.
    ///
    /// By default it holds 4 MB in memory and 20 MB on disk, in the default directory, as on Darwin.
    open class var shared: URLCache {
        get { sharedURLCache.withLockedValue { $0 } }
        set { sharedURLCache.withLockedValue { $0 = newValue } }
    }

    /// The memory capacity of the cache, in bytes. Lowering it evicts entries.
    open var memoryCapacity: Int {
        get { memory.withLockedValue { $0.capacity } }
        set { memory.withLockedValue { $0.capacity = max(0, newValue) } }
    }

    /// The disk capacity of the cache, in bytes. Lowering it evicts entries.
    open var diskCapacity: Int {
        get { disk.capacity }
        set { disk.capacity = max(0, newValue) }
    }

    /// The bytes of memory the cached responses use.
    open var currentMemoryUsage: Int {
        memory.withLockedValue { $0.usage }
    }

    /// The bytes of disk the cached responses use (a database query).
    open var currentDiskUsage: Int { disk.usage }

    /// Returns the cached response for a request, or `nil` if there is none: from memory, else from disk (the disk
    /// hit is then kept in memory too).
    ///
    /// - Parameter request: The request whose response is wanted.
    open func cachedResponse(for request: URLRequest) -> CachedURLResponse? {
        guard let key = Self.key(for: request) else { return nil }
        if let hit = memory.withLockedValue({ $0.entry(for: key) }) { return hit.response }
        return changes.withLock {
            // A store that finished since the miss left its response in memory: that one is current.
            if let hit = memory.withLockedValue({ $0.entry(for: key) }) { return hit.response }
            guard let (response, stored) = disk.response(for: key) else { return nil }
            memory.withLockedValue {
                $0.store(.init(response: response, cost: Self.cost(of: response), stored: stored), for: key)
            }
            return response
        }
    }

    /// The memory tier's answer, without touching the disk: `.miss` when the disk may still hold one.
    func memoryLookup(for request: URLRequest) -> MemoryLookup {
        guard let key = Self.key(for: request) else { return .none }
        if let hit = memory.withLockedValue({ $0.entry(for: key) }) { return .hit(hit.response) }
        return disk.isEnabled ? .miss : .none
    }

    /// See ``memoryLookup(for:)``.
    enum MemoryLookup {
        case hit(CachedURLResponse)
        /// Not in memory; the disk may have it.
        case miss
        /// Not cached.
        case none
    }

    /// Stores a cached response for a request, replacing any previous one.
    ///
    /// Nothing is stored when the response's storage policy is ``URLCache/StoragePolicy/notAllowed``. The memory tier
    /// keeps it unless it alone exceeds ``memoryCapacity``; the disk tier too, when the policy is
    /// ``URLCache/StoragePolicy/allowed`` and it fits ``diskCapacity``. Storing may evict the least recently used
    /// entries.
    ///
    /// - Parameters:
    ///   - cachedResponse: The response to store.
    ///   - request: The request it answers.
    open func storeCachedResponse(_ cachedResponse: CachedURLResponse, for request: URLRequest) {
        guard cachedResponse.storagePolicy != .notAllowed, let key = Self.key(for: request) else { return }
        let now = Date()
        let entry = MemoryCacheTier.Entry(response: cachedResponse, cost: Self.cost(of: cachedResponse), stored: now)
        changes.withLock {
            memory.withLockedValue { $0.store(entry, for: key) }
            if cachedResponse.storagePolicy == .allowed, !Self.carriesPassword(request, cachedResponse) {
                disk.store(cachedResponse, for: key, at: now)
            } else {
                disk.remove(key)
            }
        }
    }

    /// Whether the request's or the response's URL carries a password, which the disk must not keep (in the key or
    /// the stored response).
    private static func carriesPassword(_ request: URLRequest, _ cachedResponse: CachedURLResponse) -> Bool {
        request.url?.password(percentEncoded: true) != nil
            || cachedResponse.response.url?.password(percentEncoded: true) != nil
    }

    /// Removes the cached response for a request.
    ///
    /// - Parameter request: The request whose response to remove.
    open func removeCachedResponse(for request: URLRequest) {
        guard let key = Self.key(for: request) else { return }
        changes.withLock {
            memory.withLockedValue { $0.remove(key) }
            disk.remove(key)
        }
    }

    /// Removes every cached response.
    open func removeAllCachedResponses() {
        changes.withLock {
            memory.withLockedValue { $0.removeAll() }
            disk.removeAll()
        }
    }

    /// Removes the cached responses stored at or after a date.
    ///
    /// - Parameter date: The earliest storage date of the responses to remove.
    open func removeCachedResponses(since date: Date) {
        changes.withLock {
            memory.withLockedValue { $0.removeStored(since: date) }
            disk.removeStored(since: date)
        }
    }

    /// The largest body the session stores from the network: 5% of the larger capacity, as Darwin does for its
    /// disk cache, so that a big download never passes through the cache.
    var largestStoredBody: Int { max(diskCapacity, memoryCapacity) / 20 }

    /// The cache key: the method and the URL without its fragment.
    static func key(for request: URLRequest) -> String? {
        guard var url = request.url else { return nil }
        if url.fragment != nil, var components = URLComponents(url: url, resolvingAgainstBaseURL: false) {
            components.fragment = nil
            url = components.url ?? url
        }
        return (request.httpMethod ?? "GET").uppercased() + " " + url.absoluteString
    }

    /// The memory an entry is charged: its data plus an estimate of its metadata.
    private static func cost(of response: CachedURLResponse) -> Int {
        var cost = response.data.count + (response.response.url?.absoluteString.utf8.count ?? 0)
        if let http = response.response as? HTTPURLResponse {
            for (name, value) in http.headerFields {
                cost += name.utf8.count + value.utf8.count
            }
        }
        return cost
    }

    // MARK: - Data-task variants (Apple declares them in an extension; here they are in the class, so they can be
    // overridden)

    /// Stores a cached response for a data task's current request. Does nothing when the task has no request.
    ///
    /// - Parameters:
    ///   - cachedResponse: The response to store.
    ///   - dataTask: The data task whose current request the response answers.
    open func storeCachedResponse(_ cachedResponse: CachedURLResponse, for dataTask: URLSessionDataTask) {
        guard let request = dataTask.currentRequest else { return }
        storeCachedResponse(cachedResponse, for: request)
    }

    /// Passes the cached response for a data task's current request, or `nil`, to a completion handler.
    ///
    /// The handler is called before this method returns, on the calling thread.
    ///
    /// - Parameters:
    ///   - dataTask: The data task.
    ///   - completionHandler: Receives the cached response, or `nil`.
    open func getCachedResponse(
        for dataTask: URLSessionDataTask, completionHandler: @escaping @Sendable (CachedURLResponse?) -> Void
    ) {
        completionHandler(dataTask.currentRequest.flatMap { cachedResponse(for: $0) })
    }

    /// Returns the cached response for a data task's current request, or `nil`.
    ///
    /// - Parameter dataTask: The data task.
    public func cachedResponse(for dataTask: URLSessionDataTask) async -> CachedURLResponse? {
        dataTask.currentRequest.flatMap { cachedResponse(for: $0) }
    }

    /// Removes the cached response for a data task's current request.
    ///
    /// - Parameter dataTask: The data task.
    open func removeCachedResponse(for dataTask: URLSessionDataTask) {
        guard let request = dataTask.currentRequest else { return }
        removeCachedResponse(for: request)
    }
}

private let sharedURLCache: NIOLockedValueBox<URLCache> = {
    SharedStoreUse.record(.cache)
    return NIOLockedValueBox(URLCache(memoryCapacity: 4 * 1024 * 1024, diskCapacity: 20 * 1024 * 1024))
}()
