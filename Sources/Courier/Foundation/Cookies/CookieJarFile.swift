import CourierStore
import Foundation
import Logging
import NIOConcurrencyHelpers

/// Where a persistent ``HTTPCookieStorage`` keeps its cookies: a ``CookieDatabase``, written on a serial queue of its
/// own so that storing a cookie never waits for the disk (nor blocks a network thread).
///
/// Only cookies with an expiry date are written; a session cookie that replaces a persistent one deletes its row.
/// A jar that exists is opened (and read) when the storage is made; one that does not is created only when the first
/// cookie is written, so a process that never keeps a cookie never loads SQLite (1.3 MiB of resident memory) nor
/// leaves a file behind. A folder or database that cannot be used leaves the storage in memory, with one logged
/// warning.
package final class CookieJarFile: Sendable {
    private enum Database {
        /// No jar existed when the storage was made: it is created at the first write, on `queue`.
        case notYetCreated(folder: URL)
        case open(CookieDatabase)
        /// It could not be opened or created (the warning was logged).
        case unusable
    }

    /// Read at `init` and then only on `queue`.
    private let database: NIOLockedValueBox<Database>
    private let queue = DispatchQueue(label: "courier.cookies.persistence")
    private static let logger = Logger(label: "courier.cookies")

    /// Whether the jar did not exist when the storage was made (nothing was persisted before).
    let isNew: Bool
    /// The folder the jar's database is in.
    let folder: URL

    /// Opens the jar in `folder` if it exists; `nil` (with a warning) when it exists and cannot be used.
    init?(folder: URL) {
        self.folder = folder
        isNew = !FileManager.default.fileExists(atPath: folder.appendingPathComponent(CookieDatabase.fileName).path)
        if isNew {
            database = NIOLockedValueBox(.notYetCreated(folder: folder))
            return
        }
        guard let opened = Self.open(folder) else { return nil }
        database = NIOLockedValueBox(.open(opened))
    }

    private static func open(_ folder: URL) -> CookieDatabase? {
        do {
            return try CookieDatabase(folder: folder, logger: logger)
        } catch {
            logger.warning("the cookie jar in \(folder.path) cannot be used; cookies stay in memory: \(error)")
            return nil
        }
    }

    /// The unexpired cookies, oldest first, with when each was first stored (none when the jar did not exist).
    func load() -> [(cookie: HTTPCookie, created: Date)] {
        guard case .open(let opened) = database.withLockedValue({ $0 }) else { return [] }
        do {
            return try opened.load().compactMap { record in
                Self.decode(record.properties).map { ($0, record.created) }
            }
        } catch {
            Self.logger.warning("cannot read the cookie jar: \(error)")
            return []
        }
    }

    /// Writes `saved` (the persistent ones; a session cookie deletes its row instead) and deletes `deleted`, in the
    /// background, in order. The jar is created by the first write that has a persistent cookie to keep.
    func write(saved: [(cookie: HTTPCookie, created: Date)], deleted: [HTTPCookie]) {
        var records: [CookieRecord] = []
        var removals = deleted.map { (name: $0.name, domain: $0.domain, path: $0.path) }
        for (cookie, created) in saved {
            guard let expires = cookie.expiresDate, !cookie.isSessionOnly, let properties = Self.encode(cookie) else {
                removals.append((cookie.name, cookie.domain, cookie.path))
                continue
            }
            records.append(
                CookieRecord(
                    name: cookie.name, domain: cookie.domain, path: cookie.path, properties: properties,
                    expires: expires, created: created))
        }
        guard !records.isEmpty || !removals.isEmpty else { return }
        let saving = records
        let sendableRemovals = removals.map { [$0.name, $0.domain, $0.path] }
        queue.async { [database] in
            // Only this queue changes the state after `init`: the lock is not held while the jar is created.
            let target: CookieDatabase
            switch database.withLockedValue({ $0 }) {
            case .open(let opened):
                target = opened
            case .unusable:
                return
            case .notYetCreated(let folder):
                // Removals alone have nothing to remove from a jar that does not exist, unless another process
                // created it since: a cookie deleted here (a logout) must not survive there.
                let createdElsewhere = FileManager.default.fileExists(
                    atPath: folder.appendingPathComponent(CookieDatabase.fileName).path)
                guard !saving.isEmpty || createdElsewhere else { return }
                let opened = Self.open(folder)
                database.withLockedValue { $0 = opened.map(Database.open) ?? .unusable }
                guard let opened else { return }
                target = opened
            }
            do {
                try target.apply(
                    saved: saving, deleted: sendableRemovals.map { (name: $0[0], domain: $0[1], path: $0[2]) })
            } catch {
                Self.logger.warning("cannot write the cookie jar: \(error)")
            }
        }
    }

    /// Waits until every write queued so far is on disk.
    func flush() {
        queue.sync {}
    }

    /// A cookie's properties as JSON strings, in the form ``HTTPCookie/init(properties:)`` reads back.
    package static func encode(_ cookie: HTTPCookie) -> Data? {
        var fields: [String: String] = [
            HTTPCookiePropertyKey.name.rawValue: cookie.name,
            HTTPCookiePropertyKey.value.rawValue: cookie.value,
            HTTPCookiePropertyKey.domain.rawValue: cookie.domain,
            HTTPCookiePropertyKey.path.rawValue: cookie.path,
            HTTPCookiePropertyKey.version.rawValue: String(cookie.version),
        ]
        if let expires = cookie.expiresDate { fields["ExpiresSeconds"] = String(expires.timeIntervalSince1970) }
        if cookie.isSecure { fields[HTTPCookiePropertyKey.secure.rawValue] = "TRUE" }
        if cookie.isHTTPOnly { fields[HTTPCookiePropertyKey.httpOnly.rawValue] = "TRUE" }
        if let sameSite = cookie.sameSitePolicy {
            fields[HTTPCookiePropertyKey.sameSitePolicy.rawValue] = sameSite.rawValue
        }
        if let comment = cookie.comment { fields[HTTPCookiePropertyKey.comment.rawValue] = comment }
        if let commentURL = cookie.commentURL {
            fields[HTTPCookiePropertyKey.commentURL.rawValue] = commentURL.absoluteString
        }
        if let ports = cookie.portList {
            fields[HTTPCookiePropertyKey.port.rawValue] = ports.map { "\($0.intValue)" }.joined(separator: ",")
        }
        return try? JSONEncoder().encode(fields)
    }

    package static func decode(_ data: Data) -> HTTPCookie? {
        guard let fields = try? JSONDecoder().decode([String: String].self, from: data) else { return nil }
        var properties: [HTTPCookiePropertyKey: Any] = [:]
        for (key, value) in fields where key != "ExpiresSeconds" {
            properties[HTTPCookiePropertyKey(key)] = value
        }
        if let seconds = fields["ExpiresSeconds"].flatMap(TimeInterval.init) {
            properties[.expires] = Date(timeIntervalSince1970: seconds)
        }
        return HTTPCookie(properties: properties)
    }
}
