import CourierHTTP
import CourierStore
import Foundation
import Logging

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The file that keeps `URLCredentialStorage.shared`'s permanent credentials across launches: Linux has no keychain.
///
/// `$XDG_DATA_HOME/courier/credentials.json` (`~/.local/share/courier/credentials.json` without `XDG_DATA_HOME`), in
/// a folder only the user can write (see ``PrivateFolder``), mode 0600, replaced atomically on every change. Like
/// git's credential store, the passwords are in plain text, protected by the file's permissions only; a credential
/// the app must not write to disk uses `.forSession` persistence. `.synchronizable` credentials are stored as
/// `.permanent` ones (Linux has no keychain to synchronize). A file that cannot be read or decoded is ignored with a
/// logged warning, and replaced at the next change. Every app of the user shares the file: a process writes only its
/// own changes, over the file as it is then (``update(_:from:to:logger:)``), so that two processes never undo each
/// other's credentials.
enum CredentialFile {
    /// Files larger than this are ignored (a credential file is small; it is read on the caller's thread).
    static let maximumBytes = 4 << 20

    /// One stored credential: its protection space, user and password, and whether it is its space's default.
    struct Entry: Codable, Hashable {
        var host: String
        var port: Int
        var `protocol`: String?
        var proxyType: String?
        var realm: String?
        var authenticationMethod: String
        var user: String
        var password: String
        var synchronizable: Bool
        var isDefault: Bool
    }

    /// The file's top level: a version, so that a later format can tell old files apart.
    private struct Contents: Codable {
        var version: Int
        var credentials: [Entry]
    }

    /// The file of this process, from its environment; `nil` without a usable home or data folder.
    static func defaultLocation(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL? {
        if let data = environment["XDG_DATA_HOME"], data.hasPrefix("/") {
            return URL(fileURLWithPath: data, isDirectory: true).appendingPathComponent("courier/credentials.json")
        }
        if let home = environment["HOME"], home.hasPrefix("/"), home != "/" {
            return URL(fileURLWithPath: home, isDirectory: true)
                .appendingPathComponent(".local/share/courier/credentials.json")
        }
        return nil
    }

    /// Reads the entries at `url`: none when the file does not exist; none and a warning when it cannot be read,
    /// is too large, is not a credential file, or lies in a folder other users can write (it could be planted).
    static func load(from url: URL, logger: Logger) -> [Entry] {
        let folder = url.deletingLastPathComponent().path
        guard FileManager.default.fileExists(atPath: url.path) else { return [] }
        if let problem = PrivateFolder.privacyProblem(of: folder) {
            logger.warning("ignoring the credential file \(url.path): its folder \(problem)")
            return []
        }
        guard let handle = FileHandle(forReadingAtPath: url.path) else {
            logger.warning("ignoring the credential file \(url.path): it cannot be opened")
            return []
        }
        defer { try? handle.close() }
        guard let data = try? handle.read(upToCount: maximumBytes + 1), data.count <= maximumBytes else {
            logger.warning("ignoring the credential file \(url.path): it cannot be read or is too large")
            return []
        }
        guard let contents = try? JSONDecoder().decode(Contents.self, from: data), contents.version == 1 else {
            logger.warning("ignoring the credential file \(url.path): it is not a Courier credential file (corrupt?)")
            return []
        }
        return contents.credentials
    }

    /// Brings the file at `url` from what this process last wrote or read (`old`) to what it holds now (`new`)
    /// without undoing another process's changes: the file is read again under an exclusive lock of its folder and
    /// only the entries this process added, changed or removed since are applied to it (``merge(_:from:to:)``).
    static func update(_ url: URL, from old: [Entry], to new: [Entry], logger: Logger) throws(TransferError) {
        let folder = url.deletingLastPathComponent()
        try PrivateFolder.prepare(
            folder, purpose: "credential folder", hint: "(permanent credentials are kept for this process only)")
        // Another process's read-merge-write must not interleave with this one (the lock goes with the descriptor).
        let lock = open(folder.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        defer { if lock >= 0 { close(lock) } }
        if lock >= 0 {
            while flock(lock, LOCK_EX) != 0 && errno == EINTR {}
        }
        try save(merge(load(from: url, logger: logger), from: old, to: new), to: url)
    }

    /// `onDisk` with this process's changes from `old` to `new` applied: entries it added or changed (password,
    /// persistence, default) replace the file's, entries it removed leave it, and the rest of the file — another
    /// process's credentials and changes — stays as it is. An entry this process made its space's default takes the
    /// default from the file's other entries of that space. Sorted like ``URLCredentialStorage``'s entries.
    static func merge(_ onDisk: [Entry], from old: [Entry], to new: [Entry]) -> [Entry] {
        let before = Dictionary(old.map { ($0.identity, $0) }, uniquingKeysWith: { _, last in last })
        let after = Dictionary(new.map { ($0.identity, $0) }, uniquingKeysWith: { _, last in last })
        let changed = new.filter { before[$0.identity] != $0 }
        let removed = Set(old.map(\.identity).filter { after[$0] == nil })
        let replaced = Set(changed.map(\.identity))
        let newDefaults = Set(changed.filter(\.isDefault).map(\.spaceIdentity))
        var merged = onDisk.filter { !removed.contains($0.identity) && !replaced.contains($0.identity) }
        for index in merged.indices where newDefaults.contains(merged[index].spaceIdentity) {
            merged[index].isDefault = false
        }
        merged += changed
        return merged.sorted {
            ($0.host, $0.port, $0.realm ?? "", $0.authenticationMethod, $0.user)
                < ($1.host, $1.port, $1.realm ?? "", $1.authenticationMethod, $1.user)
        }
    }

    /// Replaces the file at `url` with `entries`, in the private folder ``update(_:from:to:logger:)`` prepared.
    private static func save(_ entries: [Entry], to url: URL) throws(TransferError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data: Data
        do {
            data = try encoder.encode(Contents(version: 1, credentials: entries))
        } catch {
            throw .cannotWriteToFile("cannot encode the credentials: \(error)")
        }
        try PrivateFolder.replaceFile(at: url, with: data)
    }
}

extension CredentialFile.Entry {
    /// The entry of a stored credential; `nil` for one that is not written to disk (session-only, or without a
    /// password).
    init?(space: URLProtectionSpace, credential: URLCredential, isDefault: Bool) {
        guard credential.persistence == .permanent || credential.persistence == .synchronizable,
            let user = credential.user, let password = credential.password
        else { return nil }
        self.init(
            host: space.host, port: space.port, protocol: space.protocol, proxyType: space.proxyType,
            realm: space.realm, authenticationMethod: space.authenticationMethod, user: user, password: password,
            synchronizable: credential.persistence == .synchronizable, isDefault: isDefault)
    }

    /// What tells entries apart: the protection space and the user (the password, persistence and default are what
    /// a change of the entry changes).
    var identity: Self {
        var identity = self
        identity.password = ""
        identity.synchronizable = false
        identity.isDefault = false
        return identity
    }

    /// The identity of the entry's protection space, whatever the user.
    fileprivate var spaceIdentity: Self {
        var identity = self.identity
        identity.user = ""
        return identity
    }

    /// The protection space the entry belongs to.
    var space: URLProtectionSpace {
        if let proxyType {
            return URLProtectionSpace(
                proxyHost: host, port: port, type: proxyType, realm: realm, authenticationMethod: authenticationMethod)
        }
        return URLProtectionSpace(
            host: host, port: port, protocol: self.protocol, realm: realm, authenticationMethod: authenticationMethod)
    }

    /// The credential, with the persistence it was stored with.
    var credential: URLCredential {
        URLCredential(user: user, password: password, persistence: synchronizable ? .synchronizable : .permanent)
    }
}
