import CourierStore
import Foundation
import Logging

/// Where a persistent ``HTTPCookieStorage`` keeps its cookies: a ``CookieDatabase``, written on a serial queue of its
/// own so that storing a cookie never waits for the disk (nor blocks a network thread).
///
/// Only cookies with an expiry date are written; a session cookie that replaces a persistent one deletes its row.
/// A folder or database that cannot be used leaves the storage in memory, with one logged warning.
final class CookieJarFile: Sendable {
    private let database: CookieDatabase
    private let queue = DispatchQueue(label: "courier.cookies.persistence")
    private static let logger = Logger(label: "courier.cookies")

    /// Whether the jar was created by this open (nothing was persisted before).
    var isNew: Bool { database.isNew }

    /// Opens the jar in `folder`; `nil` (with a warning) when it cannot be used.
    init?(folder: URL) {
        do {
            database = try CookieDatabase(folder: folder, logger: Self.logger)
        } catch {
            Self.logger.warning("the cookie jar in \(folder.path) cannot be used; cookies stay in memory: \(error)")
            return nil
        }
    }

    /// The unexpired cookies, oldest first, with when each was first stored.
    func load() -> [(cookie: HTTPCookie, created: Date)] {
        do {
            return try database.load().compactMap { record in
                Self.decode(record.properties).map { ($0, record.created) }
            }
        } catch {
            Self.logger.warning("cannot read the cookie jar: \(error)")
            return []
        }
    }

    /// Writes `saved` (the persistent ones; a session cookie deletes its row instead) and deletes `deleted`, in the
    /// background, in order.
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
        let database = self.database
        let saving = records
        let sendableRemovals = removals.map { [$0.name, $0.domain, $0.path] }
        queue.async {
            do {
                try database.apply(
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
    static func encode(_ cookie: HTTPCookie) -> Data? {
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

    static func decode(_ data: Data) -> HTTPCookie? {
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
