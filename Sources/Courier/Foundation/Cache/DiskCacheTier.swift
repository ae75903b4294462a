import CourierHTTP
import CourierStore
import Foundation
import Logging
import NIOConcurrencyHelpers

/// The disk tier of ``URLCache``: a ``CacheDatabase`` opened at first use, with the response head and the cache's
/// metadata encoded as JSON beside the body.
///
/// A tier that never had a capacity (an ephemeral session's cache, which shares the default folder) never opens
/// anything. One that had is measured, trimmed and cleared from its first call, also when a database an earlier run
/// left is not opened yet (``existingDatabase()``). A folder that cannot be used disables the tier for the cache's
/// lifetime, with one warning; a failed read or write is logged and treated as a miss. Every call blocks on the
/// database.
final class DiskCacheTier: Sendable {
    private struct State {
        var capacity: Int
        /// Whether the capacity was ever above 0: only then may the folder's database be this cache's.
        var hadCapacity: Bool
        var database: CacheDatabase?
        var unavailable = false
    }

    private let folder: URL
    private let state: NIOLockedValueBox<State>
    /// Held while the database is opened, so that two first uses open it once (never while calling user code).
    private let opening = NIOLock()
    private static let logger = Logger(label: "courier.cache")

    init(folder: URL, capacity: Int) {
        self.folder = folder
        self.state = NIOLockedValueBox(State(capacity: capacity, hadCapacity: capacity > 0))
    }

    var capacity: Int {
        get { state.withLockedValue { $0.capacity } }
        set {
            state.withLockedValue {
                $0.capacity = newValue
                if newValue > 0 { $0.hadCapacity = true }
            }
            guard let database = existingDatabase() else { return }
            attempt("trim") { try database.trim(toCapacity: newValue) }
        }
    }

    /// Whether the tier may hold anything (a capacity, and a usable folder as far as is known).
    var isEnabled: Bool { state.withLockedValue { $0.capacity > 0 && !$0.unavailable } }

    var usage: Int {
        guard let database = existingDatabase() else { return 0 }
        return attempt("measure") { try database.totalSize() } ?? 0
    }

    /// The stored response for `key` and when it was stored.
    func response(for key: String) -> (CachedURLResponse, Date)? {
        guard let database = database() else { return nil }
        guard let record = attempt("read", { try database.record(for: key) }) ?? nil else { return nil }
        guard let head = try? JSONDecoder().decode(StoredHead.self, from: record.head) else {
            attempt("remove") { try database.remove(key: key) }
            return nil
        }
        let response = CachedURLResponse(
            response: head.response.response, data: record.body, userInfo: nil,
            storagePolicy: URLCache.StoragePolicy(rawValue: head.storagePolicy) ?? .allowed, metadata: head.metadata)
        return (response, record.storedAt)
    }

    func store(_ response: CachedURLResponse, for key: String, at date: Date) {
        guard let database = database() else { return }
        var stored = CodableResponse(response.response)
        // A session cookie must not outlive the process here (see `URLCache`).
        stored.headers.removeAll { field in
            field.first.map { HeaderName.equal($0, "Set-Cookie") || HeaderName.equal($0, "Set-Cookie2") } ?? false
        }
        let head = StoredHead(
            response: stored, storagePolicy: response.storagePolicy.rawValue, metadata: response.metadata)
        guard let encoded = try? JSONEncoder().encode(head) else { return }
        let capacity = state.withLockedValue { $0.capacity }
        attempt("write") {
            try database.store(
                CacheRecord(key: key, head: encoded, body: response.data, storedAt: date), capacity: capacity)
        }
    }

    func remove(_ key: String) {
        guard let database = existingDatabase() else { return }
        attempt("remove") { try database.remove(key: key) }
    }

    func removeAll() {
        guard let database = existingDatabase() else { return }
        attempt("clear") { try database.removeAll() }
    }

    func removeStored(since date: Date) {
        guard let database = existingDatabase() else { return }
        attempt("clear") { try database.removeStored(since: date) }
    }

    /// The head of a stored response.
    private struct StoredHead: Codable {
        var response: CodableResponse
        var storagePolicy: UInt
        var metadata: CacheMetadata?
    }

    /// The database if it is open already.
    private func openedOrNil() -> CacheDatabase? {
        state.withLockedValue { $0.database }
    }

    /// The database if it is open, or if the folder has one (left by an earlier run, or another process's) and the
    /// tier ever had a capacity: measuring, trimming and removing must reach what was stored before this cache was
    /// first used. An app that sets `diskCapacity = 0` and clears the cache at launch expects the responses of its
    /// earlier runs gone, not kept until the capacity rises again. `nil` when there is none (nothing is created).
    private func existingDatabase() -> CacheDatabase? {
        let (opened, hadCapacity) = state.withLockedValue { ($0.database, $0.hadCapacity) }
        if let opened { return opened }
        guard hadCapacity,
            FileManager.default.fileExists(atPath: folder.appendingPathComponent(CacheDatabase.fileName).path)
        else { return nil }
        return database(evenWithoutCapacity: true)
    }

    /// The database, opened at first use; `nil` when the tier has no capacity (unless `evenWithoutCapacity`) or the
    /// folder cannot be used.
    private func database(evenWithoutCapacity: Bool = false) -> CacheDatabase? {
        let (existing, usable) = state.withLockedValue {
            ($0.database, ($0.capacity > 0 || evenWithoutCapacity) && !$0.unavailable)
        }
        if let existing { return existing }
        guard usable else { return nil }
        return opening.withLock {
            if let raced = state.withLockedValue({ $0.database }) { return raced }
            do {
                let database = try CacheDatabase(folder: folder, logger: Self.logger)
                state.withLockedValue { $0.database = database }
                return database
            } catch {
                Self.logger.warning("the disk cache in \(folder.path) cannot be used; caching in memory only: \(error)")
                state.withLockedValue { $0.unavailable = true }
                return nil
            }
        }
    }

    @discardableResult
    private func attempt<T>(_ what: String, _ body: () throws -> T) -> T? {
        do {
            return try body()
        } catch {
            Self.logger.warning("cannot \(what) the disk cache in \(folder.path): \(error)")
            return nil
        }
    }
}
