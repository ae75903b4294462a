import Foundation
import GRDB
import Logging

/// One background task as the journal keeps it: its identity, whether it is finished, and the daemon's record of it
/// (opaque here: the daemon encodes what it needs to continue the transfer after a crash).
package struct JournalTask: Sendable, Equatable {
    package var identifier: String
    package var task: Int
    package var finished: Bool
    package var record: Data

    package init(identifier: String, task: Int, finished: Bool, record: Data) {
        self.identifier = identifier
        self.task = task
        self.finished = finished
        self.record = record
    }
}

/// An event kept for an app that has not received it yet, in order of ``sequence``.
package struct JournalEvent: Sendable, Equatable {
    package var sequence: Int64
    package var identifier: String
    package var task: Int
    package var body: Data
}

/// The background daemon's journal: every task of every background session and the events not yet delivered to
/// their app, in one SQLite database (``StoreDatabase``, WAL), so that a crash of the daemon — even in the middle of
/// a write — loses nothing written before it: each change is one transaction, and the daemon writes it before it
/// acts on it. Blocking: call off the event loops.
package final class BackgroundJournal: Sendable {
    private let database: StoreDatabase

    /// Opens (creating if needed) the journal at `url`; its folder is made private. Commits are not flushed one by
    /// one (``StoreDatabase/init(at:migrator:logger:flushesEachCommit:)``): a crash of the daemon loses none, a power
    /// cut at most the last moments — like the partial files' unflushed bytes, which are trusted only on the same
    /// boot. Flushing each of a download's four commits made 1,000 queued downloads take the machine's disk.
    package init(at url: URL, logger: Logger) throws {
        database = try StoreDatabase(at: url, migrator: Self.migrator, logger: logger, flushesEachCommit: false)
    }

    private static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("background-1") { db in
            try db.create(table: "session") { table in
                table.primaryKey("identifier", .text)
                table.column("nextTask", .integer).notNull()
            }
            try db.create(table: "task") { table in
                table.column("identifier", .text).notNull()
                table.column("task", .integer).notNull()
                table.column("finished", .boolean).notNull()
                table.column("record", .blob).notNull()
                table.primaryKey(["identifier", "task"])
            }
            try db.create(table: "event") { table in
                table.autoIncrementedPrimaryKey("sequence")
                table.column("identifier", .text).notNull().indexed()
                table.column("task", .integer).notNull()
                table.column("body", .blob).notNull()
            }
        }
        migrator.registerMigration("background-2") { db in
            try db.alter(table: "session") { table in table.add(column: "launch", .blob) }
        }
        return migrator
    }

    /// Remembers what to run when `identifier`'s tasks end with no process attached (`nil`: nothing).
    package func setLaunch(_ launch: Data?, for identifier: String) throws {
        try database.write { db in
            try db.execute(
                sql: "INSERT INTO session (identifier, nextTask, launch) VALUES (?, 1, ?) "
                    + "ON CONFLICT(identifier) DO UPDATE SET launch = excluded.launch",
                arguments: [identifier, launch])
        }
    }

    /// What to run for `identifier` (see ``setLaunch(_:for:)``).
    package func launch(for identifier: String) throws -> Data? {
        try database.read { db in
            try Data.fetchOne(db, sql: "SELECT launch FROM session WHERE identifier = ?", arguments: [identifier])
        }
    }

    /// The next task identifier of a session (1 for a new one): identifiers are never reused, across app launches
    /// and daemon restarts.
    package func nextTaskIdentifier(for identifier: String) throws -> Int {
        try database.read { db in
            try Int.fetchOne(db, sql: "SELECT nextTask FROM session WHERE identifier = ?", arguments: [identifier])
        } ?? 1
    }

    /// Saves a task (inserted or replaced) and, in the same transaction, appends `event` for its app; returns the
    /// event's sequence number. The session's next identifier moves past the task's.
    @discardableResult
    package func save(_ task: JournalTask, appending event: Data? = nil) throws -> Int64? {
        try database.write { db in
            try db.execute(
                sql: "INSERT OR REPLACE INTO task (identifier, task, finished, record) VALUES (?, ?, ?, ?)",
                arguments: [task.identifier, task.task, task.finished, task.record])
            try db.execute(
                sql: """
                    INSERT INTO session (identifier, nextTask) VALUES (?, ?)
                    ON CONFLICT(identifier) DO UPDATE SET nextTask = max(nextTask, excluded.nextTask)
                    """,
                arguments: [task.identifier, task.task + 1])
            guard let event else { return nil }
            try db.execute(
                sql: "INSERT INTO event (identifier, task, body) VALUES (?, ?, ?)",
                arguments: [task.identifier, task.task, event])
            return db.lastInsertedRowID
        }
    }

    /// Every task of `identifier` (of every session when `nil`), unfinished ones only unless `includingFinished`.
    package func tasks(identifier: String? = nil, includingFinished: Bool = false) throws -> [JournalTask] {
        try database.read { db in
            var sql = "SELECT * FROM task WHERE 1"
            var arguments: StatementArguments = []
            if let identifier {
                sql += " AND identifier = ?"
                arguments += [identifier]
            }
            if !includingFinished { sql += " AND finished = 0" }
            sql += " ORDER BY identifier, task"
            return try Row.fetchAll(db, sql: sql, arguments: arguments).map { row in
                JournalTask(
                    identifier: row["identifier"], task: row["task"], finished: row["finished"],
                    record: row["record"])
            }
        }
    }

    /// The events `identifier`'s app has not received, oldest first.
    package func pendingEvents(identifier: String) throws -> [JournalEvent] {
        try database.read { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM event WHERE identifier = ? ORDER BY sequence", arguments: [identifier]
            ).map { row in
                JournalEvent(
                    sequence: row["sequence"], identifier: row["identifier"], task: row["task"], body: row["body"])
            }
        }
    }

    /// The app received the event: it is forgotten, and so is its task once finished with no event left.
    package func delivered(sequence: Int64, identifier: String) throws {
        try database.write { db in
            try db.execute(
                sql: "DELETE FROM event WHERE sequence = ? AND identifier = ?", arguments: [sequence, identifier])
            try db.execute(
                sql: """
                    DELETE FROM task WHERE identifier = ? AND finished = 1
                    AND NOT EXISTS (SELECT 1 FROM event WHERE event.identifier = task.identifier AND event.task = task.task)
                    """,
                arguments: [identifier])
        }
    }
}
