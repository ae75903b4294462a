import Foundation
import GRDB
import Logging

/// One persisted cookie: its identity (name, domain, path), its encoded properties, when it expires and when it was
/// first stored.
package struct CookieRecord: Sendable, Equatable {
    package var name: String
    package var domain: String
    package var path: String
    package var properties: Data
    package var expires: Date
    package var created: Date

    package init(name: String, domain: String, path: String, properties: Data, expires: Date, created: Date) {
        self.name = name
        self.domain = domain
        self.path = path
        self.properties = properties
        self.expires = expires
        self.created = created
    }
}

/// The persistent cookie jar: `Cookies.db` in the data folder, one row per cookie that has an expiry date (session
/// cookies are never written). Each process writes only its own changes, row by row, so two processes that share
/// the jar do not undo each other's. Blocking: call off the event loops.
package final class CookieDatabase: Sendable {
    private let database: StoreDatabase

    /// The database's file name in its folder.
    package static let fileName = "Cookies.db"

    /// Opens the jar in `folder` (made private if needed).
    package init(folder: URL, logger: Logger) throws {
        let url = folder.appendingPathComponent(Self.fileName)
        database = try StoreDatabase(at: url, migrator: Self.migrator, logger: logger)
    }

    private static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("cookies-1") { db in
            try db.create(table: "cookie") { table in
                table.column("name", .text).notNull()
                table.column("domain", .text).notNull()
                table.column("path", .text).notNull()
                table.column("properties", .blob).notNull()
                table.column("expires", .double).notNull().indexed()
                table.column("created", .double).notNull()
                table.primaryKey(["name", "domain", "path"])
            }
        }
        return migrator
    }

    /// The cookies that have not expired at `now`, oldest first; expired rows are deleted.
    package func load(now: Date = Date()) throws -> [CookieRecord] {
        try database.write { db in
            try db.execute(sql: "DELETE FROM cookie WHERE expires <= ?", arguments: [now.timeIntervalSince1970])
            return try Row.fetchAll(db, sql: "SELECT * FROM cookie ORDER BY created").map { row in
                CookieRecord(
                    name: row["name"], domain: row["domain"], path: row["path"], properties: row["properties"],
                    expires: Date(timeIntervalSince1970: row["expires"]),
                    created: Date(timeIntervalSince1970: row["created"]))
            }
        }
    }

    /// Applies changes in one transaction: `saved` rows are inserted or replaced, `deleted` identities removed.
    package func apply(saved: [CookieRecord], deleted: [(name: String, domain: String, path: String)]) throws {
        try database.write { db in
            for identity in deleted {
                try db.execute(
                    sql: "DELETE FROM cookie WHERE name = ? AND domain = ? AND path = ?",
                    arguments: [identity.name, identity.domain, identity.path])
            }
            for record in saved {
                try db.execute(
                    sql: """
                        INSERT OR REPLACE INTO cookie (name, domain, path, properties, expires, created)
                        VALUES (?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        record.name, record.domain, record.path, record.properties,
                        record.expires.timeIntervalSince1970, record.created.timeIntervalSince1970,
                    ])
            }
        }
    }
}
