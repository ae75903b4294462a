import Foundation
import NIOConcurrencyHelpers

/// The manager of credentials, keyed by protection space and user name.
///
/// The storage is thread-safe and, for now, kept in memory only: permanent credentials are not written to a keychain
/// or to disk (that comes in a later release). Credentials with ``URLCredential/Persistence-swift.enum/none``
/// persistence are never stored, as on Apple platforms. The storage does not post
/// `NSURLCredentialStorageChanged` notifications.
open class URLCredentialStorage: NSObject, @unchecked Sendable {
    private struct State {
        var credentials: [URLProtectionSpace: [String: URLCredential]] = [:]
        var defaults: [URLProtectionSpace: String] = [:]
    }

    private let state = NIOLockedValueBox(State())

    /// Creates an empty in-memory credential storage, as used by ephemeral sessions.
    public override init() {
        super.init()
    }

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
    /// in FoundationNetworking. Credentials with ``URLCredential/Persistence-swift.enum/none`` persistence or without
    /// a user name are not stored.
    ///
    /// - Parameters:
    ///   - credential: The credential to store.
    ///   - space: The protection space it applies to.
    open func set(_ credential: URLCredential, for space: URLProtectionSpace) {
        guard credential.persistence != .none, let user = credential.user else { return }
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
        guard let user = credential.user else { return }
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
    /// Credentials with ``URLCredential/Persistence-swift.enum/none`` persistence or without a user name are not
    /// stored.
    ///
    /// - Parameters:
    ///   - credential: The credential.
    ///   - space: The protection space.
    open func setDefaultCredential(_ credential: URLCredential, for space: URLProtectionSpace) {
        guard credential.persistence != .none, let user = credential.user else { return }
        let changed = state.withLockedValue { state -> Bool in
            let same = state.credentials[space]?[user]?.isEqual(credential) == true && state.defaults[space] == user
            state.credentials[space, default: [:]][user] = credential
            state.defaults[space] = user
            return !same
        }
        if changed { postChanged() }
    }

    /// Posts ``NSNotification/Name/NSURLCredentialStorageChanged`` (called after the lock is released).
    private func postChanged() {
        ChangeNotification.post(.NSURLCredentialStorageChanged, object: self)
    }
}

private let processCredentialStorage = URLCredentialStorage()

/// The key of `remove(_:for:options:)`'s options whose `true` value allows removing a credential with
/// ``URLCredential/Persistence/synchronizable`` persistence; without it such a credential stays stored.
public let NSURLCredentialStorageRemoveSynchronizableCredentials: String =
    "NSURLCredentialStorageRemoveSynchronizableCredentials"
