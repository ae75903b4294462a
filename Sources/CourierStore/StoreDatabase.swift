import CourierHTTP
import Foundation
import GRDB
import Logging

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// One SQLite database of Courier's persistent state (the disk cache, the cookie jar): a GRDB `DatabasePool` in WAL
/// mode, so that readers never wait for a writer and two processes (two apps, or an app and the daemon) can share
/// the file; writers wait up to ``busyTimeout`` for each other instead of failing.
///
/// The folder is made private (0700, see ``PrivateFolder``) and the file is created 0600 before SQLite opens it
/// (SQLite gives its `-wal` and `-shm` files the same mode). A database that cannot be read — corrupt, not a
/// database, or written by an incompatible version — is moved aside (`<name>.corrupt-<time>`) and created anew,
/// with a logged warning: never a crash, never a hang. All calls do blocking I/O: make them off the event loops.
package final class StoreDatabase: Sendable {
    /// How long a writer waits for another process's write to finish.
    package static let busyTimeout: TimeInterval = 5

    /// The database file.
    package let url: URL
    private let pool: DatabasePool

    /// Opens (creating if needed) the database at `url` and brings its schema up to date with `migrator`.
    ///
    /// - Throws: When the folder is not private or cannot be made, or the database cannot be opened even after
    ///   moving a broken one aside (a read-only folder, a full disk).
    ///
    /// `flushesEachCommit` false sets `synchronous = NORMAL`: a commit is in the write-ahead log (and survives a crash of
    /// the process) when it returns, and reaches the disk at the next checkpoint; a power cut may lose the last
    /// commits, never the database's consistency. For a journal written many times a second, where a flush per
    /// commit would load the whole machine's disk.
    package init(at url: URL, migrator: DatabaseMigrator, logger: Logger, flushesEachCommit: Bool = true) throws {
        self.url = url
        let folder = url.deletingLastPathComponent()
        try PrivateFolder.prepare(folder, purpose: "store folder", hint: "(set XDG_CACHE_HOME or XDG_DATA_HOME)")
        do {
            pool = try Self.open(url, migrator: migrator, flushesEachCommit: flushesEachCommit)
        } catch {
            guard Self.isUnreadable(error) else { throw error }
            let aside = url.appendingPathExtension("corrupt-\(Int(Date().timeIntervalSince1970))")
            logger.warning(
                "the database \(url.path) cannot be read (\(error)); moved aside to \(aside.lastPathComponent)")
            Self.moveAside(url, to: aside)
            pool = try Self.open(url, migrator: migrator, flushesEachCommit: flushesEachCommit)
        }
    }

    /// Reads in a snapshot: never waits for a writer.
    package func read<T>(_ body: (Database) throws -> T) throws -> T {
        try pool.read(body)
    }

    /// Writes in a transaction.
    package func write<T>(_ body: (Database) throws -> T) throws -> T {
        try pool.write(body)
    }

    /// Opens the database, trying again a few times when another process is creating it at the same moment: its
    /// migrations are checked and applied by each process in turn, so two processes that open a new file together
    /// can both find a table missing and the second fail to create it ("table already exists"), or find the file
    /// locked past the busy timeout while the other switches it to WAL. The second attempt sees the first's work.
    private static func open(_ url: URL, migrator: DatabaseMigrator, flushesEachCommit: Bool) throws -> DatabasePool {
        var attempt = 1
        while true {
            do {
                return try openOnce(url, migrator: migrator, flushesEachCommit: flushesEachCommit)
            } catch let error as DatabaseError where !isUnreadable(error) && attempt < 5 {
                Thread.sleep(forTimeInterval: 0.05 * Double(attempt))
                attempt += 1
            }
        }
    }

    private static func openOnce(
        _ url: URL, migrator: DatabaseMigrator, flushesEachCommit: Bool
    ) throws -> DatabasePool {
        try createPrivately(url)
        var configuration = Configuration()
        if !flushesEachCommit {
            configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
        }
        configuration.busyMode = .timeout(busyTimeout)
        configuration.label = url.lastPathComponent
        let pool = try DatabasePool(path: url.path, configuration: configuration)
        // A file that is not a database fails here, on the first read of its header.
        try migrator.migrate(pool)
        return pool
    }

    /// Creates the file 0600 unless it exists, so that SQLite (which honours an existing file's mode for its own
    /// `-wal` and `-shm` files) never creates it with the umask's mode.
    private static func createPrivately(_ url: URL) throws {
        let error = createExclusively(url.path)
        guard error == 0 || error == EEXIST else {
            throw TransferError.cannotCreateFile("cannot create \(url.path): \(PrivateFolder.describe(error))")
        }
    }

    /// Errors that mean the file is not a usable database, rather than that it cannot be reached.
    private static func isUnreadable(_ error: any Error) -> Bool {
        guard let database = error as? DatabaseError else { return false }
        return database.resultCode == .SQLITE_CORRUPT || database.resultCode == .SQLITE_NOTADB
    }

    private static func moveAside(_ url: URL, to aside: URL) {
        for suffix in ["", "-wal", "-shm"] {
            let from = url.path + suffix
            guard FileManager.default.fileExists(atPath: from) else { continue }
            if suffix.isEmpty {
                _ = rename(from, aside.path)
            } else {
                unlink(from)
            }
        }
    }
}

/// Creates `path` with mode 0600 if it does not exist; `0` or the `errno`.
private func createExclusively(_ path: String) -> Int32 {
    let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
    guard descriptor >= 0 else { return errno }
    close(descriptor)
    return 0
}
