import CourierHTTP
import CourierStore
import Foundation
import Logging

/// The file that keeps `URLCredentialStorage.shared`'s permanent credentials across launches: Linux has no keychain.
///
/// `$XDG_DATA_HOME/courier/credentials.json` (`~/.local/share/courier/credentials.json` without `XDG_DATA_HOME`), in
/// a folder only the user can write (see ``PrivateFolder``), mode 0600, replaced atomically on every change. Like
/// git's credential store, the passwords are in plain text, protected by the file's permissions only; a credential
/// the app must not write to disk uses `.forSession` persistence. `.synchronizable` credentials are stored as
/// `.permanent` ones (Linux has no keychain to synchronize). A file that cannot be read or decoded is ignored with a
/// logged warning, and replaced at the next change.
enum CredentialFile {
    /// Files larger than this are ignored (a credential file is small; it is read on the caller's thread).
    static let maximumBytes = 4 << 20

    /// One stored credential: its protection space, user and password, and whether it is its space's default.
    struct Entry: Codable, Equatable {
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

    /// Replaces the file at `url` with `entries` (creating its private folder first).
    static func save(_ entries: [Entry], to url: URL) throws(TransferError) {
        try PrivateFolder.prepare(
            url.deletingLastPathComponent(), purpose: "credential folder",
            hint: "(permanent credentials are kept for this process only)")
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
