import Foundation
import GRDB
import Logging

/// One response in the disk cache: its key, its head (encoded by the caller), its body, and when it was stored.
package struct CacheRecord: Sendable, Equatable {
    package var key: String
    package var head: Data
    package var body: Data
    package var storedAt: Date

    package init(key: String, head: Data, body: Data, storedAt: Date) {
        self.key = key
        self.head = head
        self.body = body
        self.storedAt = storedAt
    }

    /// What the record is charged against the disk capacity.
    package var size: Int { key.utf8.count + head.count + body.count }
}

/// The disk tier of the URL cache: `Cache.db` in the cache folder, one row per response, evicted least recently used
/// first to stay within the capacity. Processes that share the folder share the cache. Blocking: call off the
/// event loops.
package final class CacheDatabase: Sendable {
    private let database: StoreDatabase

    /// The database's file name in its folder.
    package static let fileName = "Cache.db"

    /// Opens the cache in `folder` (made private if needed).
    package init(folder: URL, logger: Logger) throws {
        database = try StoreDatabase(
            at: folder.appendingPathComponent(Self.fileName), migrator: Self.migrator, logger: logger)
    }

    private static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("responses-1") { db in
            try db.create(table: "response") { table in
                table.primaryKey("key", .text)
                table.column("head", .blob).notNull()
                table.column("body", .blob).notNull()
                table.column("size", .integer).notNull()
                table.column("storedAt", .double).notNull().indexed()
                table.column("lastUsed", .double).notNull().indexed()
            }
        }
        return migrator
    }

    /// The record for `key`, which becomes the most recently used.
    package func record(for key: String, now: Date = Date()) throws -> CacheRecord? {
        try database.write { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM response WHERE key = ?", arguments: [key])
            else { return nil }
            try db.execute(
                sql: "UPDATE response SET lastUsed = ? WHERE key = ?", arguments: [now.timeIntervalSince1970, key])
            return CacheRecord(
                key: row["key"], head: row["head"], body: row["body"],
                storedAt: Date(timeIntervalSince1970: row["storedAt"]))
        }
    }

    /// Stores `record` (replacing one with its key), then evicts the least recently used records until the total
    /// is within `capacity`. A record larger than the capacity is not stored.
    package func store(_ record: CacheRecord, capacity: Int, now: Date = Date()) throws {
        try database.write { db in
            try db.execute(sql: "DELETE FROM response WHERE key = ?", arguments: [record.key])
            guard record.size <= capacity else { return }
            try db.execute(
                sql: """
                    INSERT INTO response (key, head, body, size, storedAt, lastUsed) VALUES (?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    record.key, record.head, record.body, record.size, record.storedAt.timeIntervalSince1970,
                    now.timeIntervalSince1970,
                ])
            try Self.evict(db, toCapacity: capacity)
        }
    }

    /// Evicts least recently used records until the total is within `capacity`.
    package func trim(toCapacity capacity: Int) throws {
        try database.write { db in try Self.evict(db, toCapacity: capacity) }
    }

    private static func evict(_ db: Database, toCapacity capacity: Int) throws {
        var total = try Int.fetchOne(db, sql: "SELECT COALESCE(SUM(size), 0) FROM response") ?? 0
        guard total > capacity else { return }
        var victims: [String] = []
        let cursor = try Row.fetchCursor(db, sql: "SELECT key, size FROM response ORDER BY lastUsed ASC")
        while total > capacity, let row = try cursor.next() {
            victims.append(row["key"])
            total -= row["size"] as Int
        }
        for key in victims {
            try db.execute(sql: "DELETE FROM response WHERE key = ?", arguments: [key])
        }
    }

    package func remove(key: String) throws {
        try database.write { db in try db.execute(sql: "DELETE FROM response WHERE key = ?", arguments: [key]) }
    }

    package func removeAll() throws {
        try database.write { db in try db.execute(sql: "DELETE FROM response") }
    }

    /// Removes the records stored at or after `date`.
    package func removeStored(since date: Date) throws {
        try database.write { db in
            try db.execute(sql: "DELETE FROM response WHERE storedAt >= ?", arguments: [date.timeIntervalSince1970])
        }
    }

    /// The bytes the records use.
    package func totalSize() throws -> Int {
        try database.read { db in try Int.fetchOne(db, sql: "SELECT COALESCE(SUM(size), 0) FROM response") ?? 0 }
    }
}
