import Foundation
import NIOConcurrencyHelpers
import Synchronization

/// The Basic protection spaces a session authenticated in, so that later requests to them send their credential
/// at once, as Darwin does, instead of drawing a 401 first.
///
/// A space covers its origin (scheme, host and port: a space reached over HTTPS is never sent a credential over
/// plain HTTP) and, as RFC 7617 §2.2 suggests, the paths at or below the directory of the URL that was
/// authenticated. The credential itself stays in the session's credential storage and is read from there each
/// time, so removing it there stops the preemptive use. A space remembers the user whose credential worked: the
/// storage may hold others for it, and its default (which `set(_:for:)` leaves as it was) may be one the server no
/// longer accepts.
///
/// At most ``capacity`` spaces are kept, the least recently used forgotten first: a long-running process that talks
/// to many hosts or realms would otherwise keep every space for ever. A forgotten space costs one 401 the next time,
/// after which it is remembered again.
final class AuthenticatedSpaces: Sendable {
    struct Entry: Hashable {
        var scheme: String
        var host: String
        var port: Int
        /// The directory of the authenticated URL's path, ending in `/`.
        var pathPrefix: String
        var space: AuthenticationQuestion.Space
        /// The user whose credential worked; `nil`: the storage's default for the space.
        var user: String?
    }

    /// The most spaces kept.
    static let capacity = 256

    /// The spaces, the least recently remembered or used first.
    private let entries = Mutex<[Entry]>([])

    /// Whether no space is known (the common case: nothing to look up).
    var isEmpty: Bool { entries.withLock { $0.isEmpty } }

    /// How many spaces are kept (at most ``capacity``).
    var count: Int { entries.withLock { $0.count } }

    /// Forgets every space (`URLSession.reset`).
    func removeAll() {
        entries.withLock { $0.removeAll() }
    }

    /// Remembers that `space` authenticated `url` with the credential of `user` (which replaces the user remembered
    /// for the same space and directory). A `url` outside the space's own origin is ignored: a space's credential is
    /// never sent ahead to another scheme, host or port.
    func remember(_ space: AuthenticationQuestion.Space, user: String? = nil, for url: URL) {
        guard let origin = Self.origin(of: url), space.proxyType == nil,
            space.protocol?.lowercased() == origin.scheme, space.host.lowercased() == origin.host,
            space.port == origin.port
        else { return }
        let entry = Entry(
            scheme: origin.scheme, host: origin.host, port: origin.port, pathPrefix: Self.directory(of: url),
            space: space, user: user)
        entries.withLock { entries in
            entries.removeAll {
                $0.scheme == entry.scheme && $0.host == entry.host && $0.port == entry.port
                    && $0.pathPrefix == entry.pathPrefix && $0.space == entry.space
            }
            entries.append(entry)
            if entries.count > Self.capacity { entries.removeFirst(entries.count - Self.capacity) }
        }
    }

    /// The space whose origin matches `url` and whose path prefix is the longest prefix of its path.
    func space(for url: URL) -> AuthenticationQuestion.Space? {
        entry(for: url)?.space
    }

    /// The entry whose origin matches `url` and whose path prefix is the longest prefix of its path (of equally long
    /// ones, the most recent). It becomes the most recently used: a space in use is not the next one forgotten.
    func entry(for url: URL) -> Entry? {
        guard let origin = Self.origin(of: url) else { return nil }
        let path = url.path.isEmpty ? "/" : url.path
        return entries.withLock { entries in
            var best: Int? = nil
            for (index, candidate) in entries.enumerated() {
                guard candidate.scheme == origin.scheme, candidate.host == origin.host, candidate.port == origin.port,
                    path.hasPrefix(candidate.pathPrefix)
                else { continue }
                // Only a longer prefix beats a later candidate: of equally long ones, the most recent wins.
                if let current = best, entries[current].pathPrefix.count > candidate.pathPrefix.count { continue }
                best = index
            }
            guard let found = best else { return nil }
            let entry = entries.remove(at: found)
            entries.append(entry)
            return entry
        }
    }

    private static func origin(of url: URL) -> (scheme: String, host: String, port: Int)? {
        guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased() else { return nil }
        return (scheme, host, url.port ?? (scheme == "https" ? 443 : 80))
    }

    static func directory(of url: URL) -> String {
        let path = url.path.isEmpty ? "/" : url.path
        guard let slash = path.lastIndex(of: "/") else { return "/" }
        return String(path[...slash])
    }
}
