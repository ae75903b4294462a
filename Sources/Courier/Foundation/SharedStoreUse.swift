import Synchronization

/// Which of the process's shared stores (``HTTPCookieStorage/shared``, ``URLCredentialStorage/shared``,
/// ``URLCache/shared``) have been made.
///
/// Making one reads the user's files (the cookie jar, the credential file, FoundationNetworking's cookies, which it
/// imports into a new jar) and Foundation's bundle and home-directory lookups: a process that uses only ephemeral
/// sessions (the `courier` command) must not make any of them. Recorded so that tests can check that it does not.
enum SharedStoreUse {
    enum Store: Hashable, Sendable {
        case cookies, credentials, cache
    }

    private static let made = Mutex<Set<Store>>([])

    /// Records that `store` was made (called once, by its initializer).
    static func record(_ store: Store) {
        made.withLock { _ = $0.insert(store) }
    }

    /// The stores made so far in this process.
    static var stores: Set<Store> { made.withLock { $0 } }
}
