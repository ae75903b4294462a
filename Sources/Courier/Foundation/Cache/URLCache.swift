import Foundation
import NIOConcurrencyHelpers

/// An object that maps URL requests to cached responses.
///
/// Courier's cache is thread-safe and kept in memory: entries are keyed by the request's URL and HTTP method, and the
/// least recently used entries are evicted to keep ``currentMemoryUsage`` within ``memoryCapacity``. The disk
/// store and HTTP caching rules (freshness, validation) come in a later release: `URLSession` does not consult the
/// cache yet, ``diskCapacity`` is only recorded, and ``currentDiskUsage`` is always 0.
open class URLCache: NSObject, @unchecked Sendable {
    private struct Key: Hashable {
        var url: URL
        var method: String
    }

    private struct Entry {
        var response: CachedURLResponse
        var cost: Int
        var stored: Date
        var lastUse: Int
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        var memoryCapacity: Int
        var diskCapacity: Int
        var memoryUsage = 0
        var clock = 0

        mutating func tick() -> Int {
            clock += 1
            return clock
        }

        mutating func remove(_ key: Key) {
            if let removed = entries.removeValue(forKey: key) {
                memoryUsage -= removed.cost
            }
        }

        mutating func evictToCapacity() {
            while memoryUsage > memoryCapacity,
                let oldest = entries.min(by: { $0.value.lastUse < $1.value.lastUse })?.key
            {
                remove(oldest)
            }
        }
    }

    private let state: NIOLockedValueBox<State>

    /// Creates a cache with the given capacities.
    ///
    /// - Parameters:
    ///   - memoryCapacity: The memory capacity of the cache, in bytes.
    ///   - diskCapacity: The disk capacity of the cache, in bytes (recorded only).
    ///   - directory: The directory of the disk cache (ignored until the disk store exists).
    public init(memoryCapacity: Int, diskCapacity: Int, directory: URL? = nil) {
        state = NIOLockedValueBox(State(memoryCapacity: max(0, memoryCapacity), diskCapacity: max(0, diskCapacity)))
        super.init()
    }

    /// Creates a cache with the given capacities and disk path.
    ///
    /// - Parameters:
    ///   - memoryCapacity: The memory capacity of the cache, in bytes.
    ///   - diskCapacity: The disk capacity of the cache, in bytes (recorded only).
    ///   - path: The location of the disk cache (ignored until the disk store exists).
    public convenience init(memoryCapacity: Int, diskCapacity: Int, diskPath path: String?) {
        self.init(memoryCapacity: memoryCapacity, diskCapacity: diskCapacity, directory: nil)
    }

    /// The shared cache of the process. It can be replaced.
    ///
    /// By default it holds 4 MB in memory and records a 20 MB disk capacity.
    open class var shared: URLCache {
        get { sharedURLCache.withLockedValue { $0 } }
        set { sharedURLCache.withLockedValue { $0 = newValue } }
    }

    /// The memory capacity of the cache, in bytes. Lowering it evicts entries.
    open var memoryCapacity: Int {
        get { state.withLockedValue { $0.memoryCapacity } }
        set {
            state.withLockedValue { state in
                state.memoryCapacity = max(0, newValue)
                state.evictToCapacity()
            }
        }
    }

    /// The disk capacity of the cache, in bytes. Recorded only: there is no disk store yet.
    open var diskCapacity: Int {
        get { state.withLockedValue { $0.diskCapacity } }
        set { state.withLockedValue { $0.diskCapacity = max(0, newValue) } }
    }

    /// The bytes of memory the cached responses use.
    open var currentMemoryUsage: Int {
        state.withLockedValue { $0.memoryUsage }
    }

    /// The bytes of disk the cached responses use: always 0, as there is no disk store yet.
    open var currentDiskUsage: Int { 0 }

    /// Returns the cached response for a request, or `nil` if there is none.
    ///
    /// - Parameter request: The request whose response is wanted.
    open func cachedResponse(for request: URLRequest) -> CachedURLResponse? {
        guard let key = Self.key(for: request) else { return nil }
        return state.withLockedValue { state in
            guard state.entries[key] != nil else { return nil }
            let now = state.tick()
            state.entries[key]?.lastUse = now
            return state.entries[key]?.response
        }
    }

    /// Stores a cached response for a request, replacing any previous one.
    ///
    /// Nothing is stored when the response's storage policy is ``URLCache/StoragePolicy/notAllowed`` or its data
    /// alone exceeds ``memoryCapacity``. Storing may evict the least recently used entries.
    ///
    /// - Parameters:
    ///   - cachedResponse: The response to store.
    ///   - request: The request it answers.
    open func storeCachedResponse(_ cachedResponse: CachedURLResponse, for request: URLRequest) {
        guard cachedResponse.storagePolicy != .notAllowed, let key = Self.key(for: request) else { return }
        let cost = Self.cost(of: cachedResponse)
        let now = Date()
        state.withLockedValue { state in
            state.remove(key)
            guard cost <= state.memoryCapacity else { return }
            let entry = Entry(response: cachedResponse, cost: cost, stored: now, lastUse: state.tick())
            state.entries[key] = entry
            state.memoryUsage += cost
            state.evictToCapacity()
        }
    }

    /// Removes the cached response for a request.
    ///
    /// - Parameter request: The request whose response to remove.
    open func removeCachedResponse(for request: URLRequest) {
        guard let key = Self.key(for: request) else { return }
        state.withLockedValue { $0.remove(key) }
    }

    /// Removes every cached response.
    open func removeAllCachedResponses() {
        state.withLockedValue { state in
            state.entries.removeAll()
            state.memoryUsage = 0
        }
    }

    /// Removes the cached responses stored at or after a date.
    ///
    /// - Parameter date: The earliest storage date of the responses to remove.
    open func removeCachedResponses(since date: Date) {
        state.withLockedValue { state in
            for (key, entry) in state.entries where entry.stored >= date {
                state.remove(key)
            }
        }
    }

    private static func key(for request: URLRequest) -> Key? {
        guard let url = request.url else { return nil }
        return Key(url: url, method: (request.httpMethod ?? "GET").uppercased())
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

private let sharedURLCache = NIOLockedValueBox(
    URLCache(memoryCapacity: 4 * 1024 * 1024, diskCapacity: 20 * 1024 * 1024))
