import CourierHTTP
import Foundation
import NIOConcurrencyHelpers

/// A container that stores cookies and hands out the ones that apply to a URL.
///
/// The storage is thread-safe and, for now, kept in memory only: cookies are not persisted to disk between runs of
/// the process (persistence comes in a later release). So that an app switching from FoundationNetworking keeps its
/// cookies, ``shared`` starts with the unexpired cookies of FoundationNetworking's file
/// (`$XDG_DATA_HOME/<bundle name>/.cookies.shared`), read once at first use; Courier never writes that file. Every
/// change posts ``NSNotification/Name/NSHTTPCookieManagerCookiesChanged`` on `NotificationCenter.default` (after
/// the storage's lock is released); a call that changes nothing posts nothing.
open class HTTPCookieStorage: NSObject, @unchecked Sendable {
    private struct Entry {
        var cookie: HTTPCookie
        var created: Date
        var sequence: Int
    }

    private struct State {
        var entries: [Entry] = []
        var nextSequence = 0
        var acceptPolicy: HTTPCookie.AcceptPolicy = .always
    }

    private let state = NIOLockedValueBox(State())

    /// Creates an empty in-memory cookie storage, as used by ephemeral sessions.
    public override init() {
        super.init()
    }

    /// The shared cookie storage of the process.
    ///
    /// At first use it reads the cookies FoundationNetworking persisted for this app, if any (see the type's
    /// discussion); a missing, unreadable or corrupt file is ignored.
    open class var shared: HTTPCookieStorage { processCookieStorage }

    /// Stores the unexpired cookies of a FoundationNetworking cookie file, following the accept policy.
    ///
    /// - Parameter path: The file's path; nothing happens when it is missing or corrupt.
    func importFoundationCookies(fromFileAt path: String) {
        // Silently: this runs inside the initializer of `shared`, and an observer that touched `shared` from the
        // notification would re-enter it.
        for cookie in FoundationCookieFile.load(path: path, now: Date()) {
            _ = store(cookie)
        }
    }

    /// Returns the cookie storage shared by the apps and extensions of an app group, creating it on first use.
    ///
    /// On Linux there are no app groups: each identifier simply names a distinct storage within the process.
    ///
    /// - Parameter identifier: The identifier of the group container.
    open class func sharedCookieStorage(forGroupContainerIdentifier identifier: String) -> HTTPCookieStorage {
        groupCookieStorages.withLockedValue { storages in
            if let existing = storages[identifier] {
                return existing
            }
            let storage = HTTPCookieStorage()
            storages[identifier] = storage
            return storage
        }
    }

    /// The storage's cookie accept policy. Defaults to ``HTTPCookie/AcceptPolicy/always``.
    open var cookieAcceptPolicy: HTTPCookie.AcceptPolicy {
        get { state.withLockedValue { $0.acceptPolicy } }
        set { state.withLockedValue { $0.acceptPolicy = newValue } }
    }

    /// All cookies in the storage, in the order they were first stored.
    /// Whether the storage holds no cookie (a cheap check the engine makes before matching cookies).
    package var isEmpty: Bool {
        state.withLockedValue { $0.entries.isEmpty }
    }

    open var cookies: [HTTPCookie]? {
        state.withLockedValue { $0.entries.map(\.cookie) }
    }

    /// Stores a cookie, replacing any cookie with the same name, domain and path.
    ///
    /// Nothing is stored when the accept policy is ``HTTPCookie/AcceptPolicy/never``. A cookie that has already
    /// expired removes the cookie it would replace and is not stored.
    ///
    /// - Parameter cookie: The cookie to store.
    open func setCookie(_ cookie: HTTPCookie) {
        if store(cookie) { postChanged() }
    }

    /// Stores `cookie` under the lock; `true` when that changed the storage.
    private func store(_ cookie: HTTPCookie) -> Bool {
        let now = Date()
        return state.withLockedValue { state -> Bool in
            guard state.acceptPolicy != .never else { return false }
            let existing = state.entries.firstIndex { Self.sameIdentity($0.cookie, cookie) }
            if cookie.isExpired(at: now) {
                guard let existing else { return false }
                state.entries.remove(at: existing)
            } else if let existing {
                if state.entries[existing].cookie.isEqual(cookie) { return false }
                state.entries[existing].cookie = cookie
            } else {
                state.entries.append(Entry(cookie: cookie, created: now, sequence: state.nextSequence))
                state.nextSequence += 1
            }
            return true
        }
    }

    /// Removes a cookie: the stored cookie with the same name, domain and path.
    ///
    /// - Parameter cookie: The cookie to remove.
    open func deleteCookie(_ cookie: HTTPCookie) {
        let changed = state.withLockedValue { state -> Bool in
            let count = state.entries.count
            state.entries.removeAll { Self.sameIdentity($0.cookie, cookie) }
            return state.entries.count != count
        }
        if changed { postChanged() }
    }

    /// Removes the cookies stored at or after a date.
    ///
    /// - Parameter date: The earliest storage date of the cookies to remove.
    open func removeCookies(since date: Date) {
        let changed = state.withLockedValue { state -> Bool in
            let count = state.entries.count
            state.entries.removeAll { $0.created >= date }
            return state.entries.count != count
        }
        if changed { postChanged() }
    }

    /// Returns all cookies sorted by `sortOrder`: the first descriptor decides, the next ones break ties, and
    /// cookies that compare equal under all of them keep the order of ``cookies``.
    ///
    /// Linux has no key-value coding, so the descriptors must be made with key paths of ``HTTPCookie``, for example
    /// `NSSortDescriptor(keyPath: \HTTPCookie.name, ascending: true)`.
    ///
    /// - Parameter sortOrder: The sort descriptors, most significant first.
    /// - Returns: The sorted cookies (empty when the storage is).
    open func sortedCookies(using sortOrder: [NSSortDescriptor]) -> [HTTPCookie] {
        let all = Array((cookies ?? []).enumerated())
        return all.sorted { lhs, rhs in
            for descriptor in sortOrder {
                switch descriptor.compare(lhs.element, to: rhs.element) {
                case .orderedAscending: return true
                case .orderedDescending: return false
                case .orderedSame: continue
                }
            }
            return lhs.offset < rhs.offset
        }.map(\.element)
    }

    /// The class, its address and the number of cookies stored, like `<Courier.HTTPCookieStorage: 0x…> { 3 cookies }`.
    open override var description: String {
        let count = state.withLockedValue { $0.entries.count }
        return super.description + " { \(count) cookie\(count == 1 ? "" : "s") }"
    }

    /// Posts ``NSNotification/Name/NSHTTPCookieManagerCookiesChanged`` (called after the lock is released): on the
    /// calling thread, except on one of Courier's network threads (cookies a response set), where observers — app
    /// code — must not run; from a background queue then.
    private func postChanged() {
        ChangeNotification.post(.NSHTTPCookieManagerCookiesChanged, object: self)
    }

    /// Returns the cookies to send to a URL.
    ///
    /// A cookie is sent when the URL's host domain-matches its domain (exactly, for host-only cookies), the URL's
    /// path path-matches its path, it has not expired, and, if it is secure, the URL's scheme is `https` or `wss`
    /// (RFC 6265 §5.4). Cookies with longer paths come first, then older cookies.
    ///
    /// - Parameter URL: The URL a request is about to be sent to.
    /// - Returns: The matching cookies, possibly empty; `nil` when the URL has no host.
    open func cookies(for URL: URL) -> [HTTPCookie]? {
        guard let host = URL.host, !host.isEmpty else { return nil }
        let path = URL.path(percentEncoded: true)
        let isSecureScheme = CookieMatching.isSecureScheme(URL.scheme)
        let now = Date()
        let matching = state.withLockedValue { state in
            state.entries.filter { entry in
                let cookie = entry.cookie
                return !cookie.isExpired(at: now) && (isSecureScheme || !cookie.isSecure)
                    && Self.domainMatches(cookie, host: host)
                    && CookieMatching.pathMatches(requestPath: path, cookiePath: cookie.path)
            }
        }
        return
            matching
            .sorted { lhs, rhs in
                lhs.cookie.path.count != rhs.cookie.path.count
                    ? lhs.cookie.path.count > rhs.cookie.path.count : lhs.sequence < rhs.sequence
            }
            .map(\.cookie)
    }

    /// Stores cookies received from a URL, following the accept policy.
    ///
    /// Nothing is stored when the policy is ``HTTPCookie/AcceptPolicy/never`` or `URL` has no host. With
    /// ``HTTPCookie/AcceptPolicy/onlyFromMainDocumentDomain`` and a `mainDocumentURL`, cookies are stored only when
    /// the URL's host and the main document's host are the same or one is a subdomain of the other. Only cookies
    /// whose domain the URL's host domain-matches are stored. From a URL whose scheme is not `https` or `wss`, a
    /// `Secure` cookie is ignored, and so is a cookie that would overwrite or shadow a stored `Secure` cookie
    /// (RFC 6265bis §5.7).
    ///
    /// - Parameters:
    ///   - cookies: The cookies to store.
    ///   - URL: The URL that set the cookies.
    ///   - mainDocumentURL: The URL of the main document, if any.
    open func setCookies(_ cookies: [HTTPCookie], for URL: URL?, mainDocumentURL: URL?) {
        let policy = cookieAcceptPolicy
        guard policy != .never, let host = URL?.host, !host.isEmpty else { return }
        if policy == .onlyFromMainDocumentDomain, let mainDocumentURL {
            guard let mainHost = mainDocumentURL.host,
                CookieMatching.domainMatches(host: host, domain: mainHost)
                    || CookieMatching.domainMatches(host: mainHost, domain: host)
            else { return }
        }
        let fromSecureOrigin = CookieMatching.isSecureScheme(URL?.scheme)
        for cookie in cookies where Self.domainMatches(cookie, host: host) {
            // RFC 6265bis §5.7: a non-secure origin can neither set a Secure cookie nor overwrite or shadow one.
            if !fromSecureOrigin && (cookie.isSecure || shadowsSecureCookie(cookie)) { continue }
            setCookie(cookie)
        }
    }

    /// Whether a stored `Secure` cookie would be overwritten or shadowed by `cookie`.
    private func shadowsSecureCookie(_ cookie: HTTPCookie) -> Bool {
        (cookies ?? []).contains { stored in
            CookieMatching.shadowsSecureCookie(
                name: cookie.name,
                domain: cookie.domain,
                path: cookie.path,
                storedName: stored.name,
                storedDomain: stored.domain,
                storedPath: stored.path,
                storedIsSecure: stored.isSecure
            )
        }
    }

    private static func sameIdentity(_ lhs: HTTPCookie, _ rhs: HTTPCookie) -> Bool {
        lhs.name == rhs.name && lhs.path == rhs.path && HeaderName.equal(lhs.domain, rhs.domain)
    }

    private static func domainMatches(_ cookie: HTTPCookie, host: String) -> Bool {
        cookie.isHostOnly
            ? HeaderName.equal(cookie.domain, host) : CookieMatching.domainMatches(host: host, domain: cookie.domain)
    }
}

private let processCookieStorage: HTTPCookieStorage = {
    let storage = HTTPCookieStorage()
    if let path = FoundationCookieFile.defaultPath() {
        storage.importFoundationCookies(fromFileAt: path)
    }
    return storage
}()
private let groupCookieStorages = NIOLockedValueBox<[String: HTTPCookieStorage]>([:])
