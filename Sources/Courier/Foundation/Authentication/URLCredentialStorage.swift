import Foundation
import Logging
import NIOConcurrencyHelpers

/// The manager of credentials, keyed by protection space and user name.
///
/// The storage is thread-safe. Credentials with ``URLCredential/Persistence-swift.enum/none`` persistence are never
/// stored, as on Apple platforms; `.forSession` ones live in process memory. ``shared`` keeps `.permanent` and
/// `.synchronizable` credentials across launches in a file only the user can read —
/// `$XDG_DATA_HOME/courier/credentials.json` (`~/.local/share/courier/credentials.json`), mode 0600 in a 0700
/// folder, replaced atomically — since Linux has no keychain; the passwords are in plain text there, protected by the
/// file's permissions, as in git's credential store. A storage made with ``init()`` (an ephemeral session's) is kept
/// in memory only. Every change posts ``NSNotification/Name/NSURLCredentialStorageChanged``; a change that changes
/// nothing posts nothing.
open class URLCredentialStorage: NSObject, @unchecked Sendable {
    private struct State {
        var credentials: [URLProtectionSpace: [String: URLCredential]] = [:]
        var defaults: [URLProtectionSpace: String] = [:]
    }

    private let state = NIOLockedValueBox(State())
    /// Whether an identity (client certificate) credential was ever stored: sessions without a delegate look one up
    /// for every new TLS connection, which this keeps off the common path.
    private let everHeldIdentity = NIOLockedValueBox(false)
    /// Where permanent credentials are kept, for the shared storage.
    private let file: URL?
    /// The entries last written to `file`; its lock also keeps two writers from interleaving.
    private let saved = NIOLockedValueBox<[CredentialFile.Entry]>([])
    private static let logger = Logger(label: "courier.credentials")

    /// Creates an empty in-memory credential storage, as used by ephemeral sessions.
    public override init() {
        self.file = nil
        super.init()
    }

    /// A storage that keeps its permanent credentials in `file` (read now; rewritten on every change to them).
    package init(file: URL?) {
        self.file = file
        super.init()
        guard let file else { return }
        adopt(CredentialFile.load(from: file, logger: Self.logger))
        saved.withLockedValue { $0 = Self.persistentEntries(of: state.withLockedValue { $0 }) }
    }

    /// An in-memory storage holding the credentials of `file` as they are now; it never writes the file.
    package init(copyOf file: URL) {
        self.file = nil
        super.init()
        adopt(CredentialFile.load(from: file, logger: Self.logger))
    }

    private func adopt(_ entries: [CredentialFile.Entry]) {
        state.withLockedValue { state in
            for entry in entries {
                let space = entry.space
                state.credentials[space, default: [:]][entry.user] = entry.credential
                if entry.isDefault || state.defaults[space] == nil { state.defaults[space] = entry.user }
            }
        }
    }

    /// The file that keeps the storage's permanent credentials; `nil` for an in-memory storage.
    package var persistentFile: URL? { file }

    /// The shared credential storage of the process.
    open class var shared: URLCredentialStorage { processCredentialStorage }

    /// All stored credentials, keyed by protection space and then by user name.
    open var allCredentials: [URLProtectionSpace: [String: URLCredential]] {
        state.withLockedValue { $0.credentials }
    }

    /// Returns the credentials stored for a protection space, keyed by user name, or `nil` when there are none.
    ///
    /// - Parameter space: The protection space.
    open func credentials(for space: URLProtectionSpace) -> [String: URLCredential]? {
        state.withLockedValue { $0.credentials[space] }
    }

    /// Stores a credential for a protection space, replacing a stored credential with the same user name.
    ///
    /// When the protection space has no default credential yet, the credential becomes its default, as on Darwin and
    /// in FoundationNetworking. Credentials with ``URLCredential/Persistence-swift.enum/none`` persistence are not
    /// stored, nor are trust credentials. An identity (client certificate) credential is stored under the empty
    /// user name and kept in memory only, whatever its persistence.
    ///
    /// - Parameters:
    ///   - credential: The credential to store.
    ///   - space: The protection space it applies to.
    open func set(_ credential: URLCredential, for space: URLProtectionSpace) {
        guard credential.persistence != .none, let user = keyNoting(credential) else { return }
        let changed = state.withLockedValue { state -> Bool in
            if state.credentials[space]?[user]?.isEqual(credential) == true { return false }
            state.credentials[space, default: [:]][user] = credential
            if state.defaults[space] == nil {
                state.defaults[space] = user
            }
            return true
        }
        if changed { postChanged() }
    }

    /// Removes a credential from a protection space.
    ///
    /// - Parameters:
    ///   - credential: The credential to remove; it is matched by user name.
    ///   - space: The protection space it applies to.
    open func remove(_ credential: URLCredential, for space: URLProtectionSpace) {
        remove(credential, for: space, options: nil)
    }

    /// Removes a credential from a protection space.
    ///
    /// - Parameters:
    ///   - credential: The credential to remove; it is matched by user name.
    ///   - space: The protection space it applies to.
    ///   - options: Removal options. A stored credential with ``URLCredential/Persistence/synchronizable``
    ///     persistence is removed only when ``NSURLCredentialStorageRemoveSynchronizableCredentials`` maps to
    ///     `true`, as on Darwin. Posts ``NSNotification/Name/NSURLCredentialStorageChanged`` when a credential was
    ///     removed.
    open func remove(_ credential: URLCredential, for space: URLProtectionSpace, options: [String: Any]? = nil) {
        guard let user = Self.key(of: credential) else { return }
        let removesSynchronizable = (options?[NSURLCredentialStorageRemoveSynchronizableCredentials] as? Bool) == true
        let changed = state.withLockedValue { state -> Bool in
            guard let stored = state.credentials[space]?[user] else { return false }
            if stored.persistence == .synchronizable && !removesSynchronizable { return false }
            state.credentials[space]?[user] = nil
            if state.credentials[space]?.isEmpty == true {
                state.credentials[space] = nil
            }
            if state.defaults[space] == user {
                state.defaults[space] = nil
            }
            return true
        }
        if changed { postChanged() }
    }

    /// Returns the default credential of a protection space, or `nil`.
    ///
    /// - Parameter space: The protection space.
    open func defaultCredential(for space: URLProtectionSpace) -> URLCredential? {
        state.withLockedValue { state in
            state.defaults[space].flatMap { state.credentials[space]?[$0] }
        }
    }

    /// Stores a credential and makes it the default credential of a protection space.
    ///
    /// Credentials with ``URLCredential/Persistence-swift.enum/none`` persistence and trust credentials are not
    /// stored; an identity credential is stored under the empty user name, in memory only.
    ///
    /// - Parameters:
    ///   - credential: The credential.
    ///   - space: The protection space.
    open func setDefaultCredential(_ credential: URLCredential, for space: URLProtectionSpace) {
        guard credential.persistence != .none, let user = keyNoting(credential) else { return }
        let changed = state.withLockedValue { state -> Bool in
            let same = state.credentials[space]?[user]?.isEqual(credential) == true && state.defaults[space] == user
            state.credentials[space, default: [:]][user] = credential
            state.defaults[space] = user
            return !same
        }
        if changed { postChanged() }
    }

    /// The key a credential is stored under in its space: its user name, or the empty string for an identity
    /// credential (a client-certificate space holds one identity per key, as it has no user names). Trust
    /// credentials are not stored. Noting an identity here is what lets ``holdsIdentities`` skip the lookup.
    private func keyNoting(_ credential: URLCredential) -> String? {
        if credential.identity != nil { everHeldIdentity.withLockedValue { $0 = true } }
        return Self.key(of: credential)
    }

    private static func key(of credential: URLCredential) -> String? {
        credential.user ?? (credential.identity != nil ? "" : nil)
    }

    /// Whether an identity credential was ever stored here.
    var holdsIdentities: Bool { everHeldIdentity.withLockedValue { $0 } }

    /// Writes the permanent credentials to the file when they changed, then posts
    /// ``NSNotification/Name/NSURLCredentialStorageChanged`` (called after the state's lock is released).
    private func postChanged() {
        persist()
        ChangeNotification.post(.NSURLCredentialStorageChanged, object: self)
    }

    /// Brings the file up to date with this storage's changes since it last wrote (or read) it, keeping what other
    /// processes wrote meanwhile (``CredentialFile/update(_:from:to:logger:)``). The snapshot is taken under the
    /// file's lock, so that of two changes racing, the later state is the one written last. A file that cannot be
    /// written leaves the credentials in memory, with a logged warning.
    private func persist() {
        guard let file else { return }
        saved.withLockedValue { saved in
            let entries = Self.persistentEntries(of: state.withLockedValue { $0 })
            guard entries != saved else { return }
            do {
                try CredentialFile.update(file, from: saved, to: entries, logger: Self.logger)
                saved = entries
            } catch {
                Self.logger.warning("cannot store permanent credentials in \(file.path): \(error)")
            }
        }
    }

    /// The credentials of `state` that go to disk, in a stable order.
    private static func persistentEntries(of state: State) -> [CredentialFile.Entry] {
        var entries: [CredentialFile.Entry] = []
        for (space, byUser) in state.credentials {
            for (user, credential) in byUser {
                if let entry = CredentialFile.Entry(
                    space: space, credential: credential, isDefault: state.defaults[space] == user)
                {
                    entries.append(entry)
                }
            }
        }
        return entries.sorted {
            ($0.host, $0.port, $0.realm ?? "", $0.authenticationMethod, $0.user)
                < ($1.host, $1.port, $1.realm ?? "", $1.authenticationMethod, $1.user)
        }
    }
}

private let processCredentialStorage: URLCredentialStorage = {
    SharedStoreUse.record(.credentials)
    return URLCredentialStorage(file: CredentialFile.defaultLocation())
}()

/// The key of `remove(_:for:options:)`'s options whose `true` value allows removing a credential with
/// ``URLCredential/Persistence/synchronizable`` persistence; without it such a credential stays stored.
public let NSURLCredentialStorageRemoveSynchronizableCredentials: String =
    "NSURLCredentialStorageRemoveSynchronizableCredentials"
