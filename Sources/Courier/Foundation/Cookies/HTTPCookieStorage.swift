import CourierHTTP
import CourierStore
import Foundation
import NIOConcurrencyHelpers
import Synchronization

/// A container that stores cookies and hands out the ones that apply to a URL.
///
/// The storage is thread-safe. Lookups are indexed by domain: a request looks at the cookies of its host and of the
/// host's parent domains only, never at every stored cookie. A cookie's name and value may take at most 4096 bytes
/// (longer ones are refused when parsed); a site (a registrable domain with all its subdomains) keeps at most
/// ``maximumCookiesPerDomain`` cookies and the storage at most ``maximumCookies``, the oldest going first, as browsers
/// and Darwin do.
///
/// ``shared`` is persistent: cookies with an expiry date are kept in `Cookies.db` under
/// `$XDG_DATA_HOME/<application>/courier/` (`~/.local/share/<application>/courier/`, 0600 in a 0700 folder) and come
/// back in the next run; session cookies do not. Writes happen in the background, change by change, so two
/// processes that share the jar keep each other's cookies. The file is created by the first cookie worth keeping.
/// On its first run, so that an app switching from FoundationNetworking keeps its cookies, it also takes the
/// unexpired cookies of FoundationNetworking's file (`$XDG_DATA_HOME/<bundle name>/.cookies.shared`); Courier never
/// writes that file. A storage made with ``init()``
/// (an ephemeral session's) is kept in memory only.
///
/// Every change posts ``NSNotification/Name/NSHTTPCookieManagerCookiesChanged`` on `NotificationCenter.default` (after
/// the storage's lock is released); a call that changes nothing posts nothing. Changing the accept policy posts
/// ``NSNotification/Name/NSHTTPCookieManagerAcceptPolicyChanged``.
open class HTTPCookieStorage: NSObject, @unchecked Sendable {
    private struct Identity: Hashable {
        var name: String
        var domain: String
        var path: String

        init(_ cookie: HTTPCookie) {
            name = cookie.name
            domain = cookie.domain.lowercased()
            path = cookie.path
        }
    }

    private struct Entry {
        var cookie: HTTPCookie
        var created: Date
        var sequence: Int
        /// The cookie's site (see ``State/siteKey(_:)``), whose count the per-site limit bounds.
        var site: String
    }

    /// What a change did, for the jar and the notification.
    private struct Change {
        var saved: [(cookie: HTTPCookie, created: Date)] = []
        var deleted: [HTTPCookie] = []
        var isEmpty: Bool { saved.isEmpty && deleted.isEmpty }
    }

    private struct State {
        var entries: [Int: Entry] = [:]
        var byIdentity: [Identity: Int] = [:]
        /// Cookie sequences by domain (lowercased, without a leading dot).
        var byDomain: [String: Set<Int>] = [:]
        /// Cookie sequences by site (``siteKey(_:)``), for the per-site limit.
        var bySite: [String: Set<Int>] = [:]
        /// Sequences in the order stored; removed ones are skipped when met.
        var order: [Int] = []
        var orderStart = 0
        var nextSequence = 0
        var acceptPolicy: HTTPCookie.AcceptPolicy = .always

        static func domainKey(_ domain: String) -> String {
            let lowered = domain.lowercased()
            return lowered.hasPrefix(".") ? String(lowered.dropFirst()) : lowered
        }

        /// The site a cookie's domain belongs to: its registrable domain (`a.example.co.uk` → `example.co.uk`), so
        /// that one site's many subdomains share one limit (as browsers count, RFC 6265 §6.1); the domain itself
        /// for an IP address or a name without a registrable domain (`localhost`, a public suffix).
        static func siteKey(_ domain: String) -> String {
            let key = domainKey(domain)
            if CookieMatching.isIPAddress(key) { return key }
            return PublicSuffixList.shared.registrableDomain(of: key) ?? key
        }

        mutating func insert(_ cookie: HTTPCookie, created: Date, site: String) -> Int {
            let sequence = nextSequence
            nextSequence += 1
            entries[sequence] = Entry(cookie: cookie, created: created, sequence: sequence, site: site)
            byIdentity[Identity(cookie)] = sequence
            byDomain[Self.domainKey(cookie.domain), default: []].insert(sequence)
            bySite[site, default: []].insert(sequence)
            order.append(sequence)
            compactOrderIfMostlyRemoved()
            return sequence
        }

        /// Drops the sequences of removed cookies from ``order`` once they outnumber the stored ones (by a margin, so
        /// the rebuild's cost is spread over many inserts). ``enforceLimits(site:into:)`` skips them only when the
        /// total limit evicts, so a site that sets and deletes a cookie again and again (a flash message, a login and
        /// logout, a `reset()` between jobs) would otherwise grow the order for as long as the process runs.
        private mutating func compactOrderIfMostlyRemoved() {
            guard order.count - orderStart > 2 * entries.count + 1024 else { return }
            let stored = entries
            order = order[orderStart...].filter { stored[$0] != nil }
            orderStart = 0
        }

        /// How many sequences ``order`` keeps, stored or not (for tests).
        var orderCount: Int { order.count - orderStart }

        @discardableResult
        mutating func remove(_ sequence: Int) -> HTTPCookie? {
            guard let entry = entries.removeValue(forKey: sequence) else { return nil }
            byIdentity[Identity(entry.cookie)] = nil
            let key = Self.domainKey(entry.cookie.domain)
            byDomain[key]?.remove(sequence)
            if byDomain[key]?.isEmpty == true { byDomain[key] = nil }
            bySite[entry.site]?.remove(sequence)
            if bySite[entry.site]?.isEmpty == true { bySite[entry.site] = nil }
            return entry.cookie
        }

        /// Evicts the oldest cookies of `site` beyond the per-site limit, then the oldest of all beyond the total
        /// limit. Counting by site, not by exact domain, keeps one server's cookies set on many subdomains of its own
        /// from filling the storage and pushing every other site's cookies out through the total limit.
        mutating func enforceLimits(site: String, into change: inout Change) {
            while let sequences = bySite[site], sequences.count > HTTPCookieStorage.maximumCookiesPerDomain,
                let oldest = sequences.min(), let removed = remove(oldest)
            {
                change.deleted.append(removed)
            }
            while entries.count > HTTPCookieStorage.maximumCookies, orderStart < order.count {
                let oldest = order[orderStart]
                orderStart += 1
                if let removed = remove(oldest) { change.deleted.append(removed) }
            }
            // Drop the skipped prefix now and then, so the order never grows without bound.
            if orderStart > 1024 && orderStart * 2 > order.count {
                order.removeFirst(orderStart)
                orderStart = 0
            }
        }
    }

    /// The most cookies one site keeps, its registrable domain and all its subdomains together (the figure and the
    /// grouping of Chromium and Firefox); more evict the site's oldest.
    public static let maximumCookiesPerDomain = 180
    /// The most cookies a storage keeps (RFC 6265 asks for at least 3000); more evict the oldest. Lookups are
    /// indexed by domain, so a full storage costs a request no more than an empty one.
    public static let maximumCookies = 10_000

    private let state = Mutex(State())
    /// Where the cookies persist; `nil` for an in-memory storage.
    private let jar: CookieJarFile?

    /// Creates an empty in-memory cookie storage, as used by ephemeral sessions.
    public override init() {
        jar = nil
        super.init()
    }

    /// A storage persisted in `folder` (see the type's discussion), loaded now; in memory only when the folder
    /// cannot be used.
    package init(persistentIn folder: URL) {
        jar = CookieJarFile(folder: folder)
        super.init()
        let loaded = jar?.load() ?? []
        let now = Date()
        state.withLock { state in
            for (cookie, created) in loaded where !cookie.isExpired(at: now) {
                if let existing = state.byIdentity[Identity(cookie)] { state.remove(existing) }
                _ = state.insert(cookie, created: created, site: State.siteKey(cookie.domain))
            }
        }
    }

    /// Whether this storage was created with nothing persisted before (its jar is new, or it has none).
    var startsFresh: Bool { jar?.isNew ?? true }

    /// The folder of the storage's jar; `nil` for an in-memory storage.
    package var persistentFolder: URL? { jar?.folder }

    /// Waits until every change made so far is written to the jar (for tests and processes about to exit).
    package func flushToDisk() {
        jar?.flush()
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
            // (Not `jar?.write(saved: store(cookie)…)`: optional chaining would skip the store without a jar.)
            let change = store(cookie)
            jar?.write(saved: change.saved, deleted: [])
        }
    }

    /// Returns the cookie storage shared by the apps and extensions of an app group, creating it on first use.
    ///
    /// Linux has no app groups: a group is a persistent jar that every app naming the same identifier shares, in
    /// `$XDG_DATA_HOME/courier/groups/<identifier>/`.
    ///
    /// - Parameter identifier: The identifier of the group container.
    open class func sharedCookieStorage(forGroupContainerIdentifier identifier: String) -> HTTPCookieStorage {
        groupCookieStorages.withLock { storages in
            if let existing = storages[identifier] {
                return existing
            }
            let storage = HTTPCookieStorage(persistentIn: StoreLocation.groupFolder(identifier))
            storages[identifier] = storage
            return storage
        }
    }

    /// The storage's cookie accept policy. Defaults to ``HTTPCookie/AcceptPolicy/always``.
    open var cookieAcceptPolicy: HTTPCookie.AcceptPolicy {
        get { state.withLock { $0.acceptPolicy } }
        set {
            let changed = state.withLock { state in
                defer { state.acceptPolicy = newValue }
                return state.acceptPolicy != newValue
            }
            if changed { ChangeNotification.post(.NSHTTPCookieManagerAcceptPolicyChanged, object: self) }
        }
    }

    /// How many cookie sequences the storage's insertion order keeps, including those of removed cookies (for tests:
    /// it must follow the cookies stored, not every cookie ever stored).
    var retainedOrderCount: Int { state.withLock { $0.orderCount } }

    /// Whether the storage holds no cookie (a cheap check the engine makes before matching cookies).
    package var isEmpty: Bool {
        state.withLock { $0.entries.isEmpty }
    }

    /// All cookies in the storage, in the order they were first stored.
    open var cookies: [HTTPCookie]? {
        state.withLock { state in
            state.entries.values.sorted { $0.sequence < $1.sequence }.map(\.cookie)
        }
    }

    /// Stores a cookie, replacing any cookie with the same name, domain and path.
    ///
    /// Nothing is stored when the accept policy is ``HTTPCookie/AcceptPolicy/never``. A cookie that has already
    /// expired removes the cookie it would replace and is not stored.
    ///
    /// - Parameter cookie: The cookie to store.
    open func setCookie(_ cookie: HTTPCookie) {
        commit(store(cookie))
    }

    /// Stores `cookie` under the lock; what that changed. A replaced cookie keeps its creation time and place
    /// (RFC 6265 §5.3 step 11).
    private func store(_ cookie: HTTPCookie) -> Change {
        let now = Date()
        // Outside the lock: the first use reads the Public Suffix List.
        let site = State.siteKey(cookie.domain)
        return state.withLock { state -> Change in
            var change = Change()
            guard state.acceptPolicy != .never else { return change }
            let existing = state.byIdentity[Identity(cookie)]
            if cookie.isExpired(at: now) {
                guard let existing, let removed = state.remove(existing) else { return change }
                change.deleted.append(removed)
            } else if let existing, let entry = state.entries[existing] {
                if entry.cookie.isEqual(cookie) { return change }
                state.entries[existing]?.cookie = cookie
                change.saved.append((cookie, entry.created))
            } else {
                _ = state.insert(cookie, created: now, site: site)
                change.saved.append((cookie, now))
                state.enforceLimits(site: site, into: &change)
            }
            return change
        }
    }

    /// Persists a change and tells the observers (after the lock is released).
    private func commit(_ change: Change) {
        guard !change.isEmpty else { return }
        jar?.write(saved: change.saved, deleted: change.deleted)
        postChanged()
    }

    /// Removes a cookie: the stored cookie with the same name, domain and path.
    ///
    /// - Parameter cookie: The cookie to remove.
    open func deleteCookie(_ cookie: HTTPCookie) {
        let change = state.withLock { state -> Change in
            var change = Change()
            if let existing = state.byIdentity[Identity(cookie)], let removed = state.remove(existing) {
                change.deleted.append(removed)
            }
            return change
        }
        commit(change)
    }

    /// Removes the cookies stored at or after a date.
    ///
    /// - Parameter date: The earliest storage date of the cookies to remove.
    open func removeCookies(since date: Date) {
        let change = state.withLock { state -> Change in
            var change = Change()
            for (sequence, entry) in state.entries where entry.created >= date {
                if let removed = state.remove(sequence) { change.deleted.append(removed) }
            }
            return change
        }
        commit(change)
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

    /// The domains whose cookies may apply to `host`: the host and, for a name, its parent domains (an IP address
    /// has none).
    private static func candidateDomains(of host: String) -> [String] {
        let lowered = HeaderName.canonical(host)
        if CookieMatching.isIPAddress(lowered) { return [lowered] }
        var domains = [lowered]
        // By bytes: a dot is ASCII, so what follows one starts a character; walking `Character`s cost more than
        // the rest of a lookup.
        let bytes = lowered.utf8
        var rest = bytes.startIndex
        while let dot = bytes[rest...].firstIndex(of: UInt8(ascii: ".")) {
            rest = bytes.index(after: dot)
            if rest != bytes.endIndex { domains.append(String(lowered[rest...])) }
        }
        return domains
    }

    /// Whether `cookie` may go to `port`: it has no port list, or the list names the port. A port-restricted
    /// cookie never goes to a URL whose port is unknown (a scheme without a default port).
    private static func portMatches(_ cookie: HTTPCookie, port: Int?) -> Bool {
        guard let ports = cookie.portList, !ports.isEmpty else { return true }
        guard let port else { return false }
        return ports.contains { $0.intValue == port }
    }

    /// The port a URL without one reaches: 80 for `http` and `ws`, 443 for `https` and `wss`.
    private static func defaultPort(of scheme: String?) -> Int? {
        switch scheme.map(HeaderName.canonical) {
        case "http", "ws": 80
        case "https", "wss": 443
        default: nil
        }
    }

    /// The class, its address and the number of cookies stored, like `<Courier.HTTPCookieStorage: 0x…> { 3 cookies }`.
    open override var description: String {
        let count = state.withLock { $0.entries.count }
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
    /// (RFC 6265 §5.4). A cookie with a ``HTTPCookie/portList`` is sent only to the ports it lists (the URL's port,
    /// or its scheme's default port), as Apple documents. Cookies with longer paths come first, then older cookies.
    ///
    /// - Parameter URL: The URL a request is about to be sent to.
    /// - Returns: The matching cookies, possibly empty; `nil` when the URL has no host.
    open func cookies(for URL: URL) -> [HTTPCookie]? {
        guard let host = URL.host, !host.isEmpty else { return nil }
        let path = URL.path(percentEncoded: true)
        let isSecureScheme = CookieMatching.isSecureScheme(URL.scheme)
        let port = URL.port ?? Self.defaultPort(of: URL.scheme)
        let now = Date()
        let candidates = Self.candidateDomains(of: host)
        let matching = state.withLock { state in
            var found: [Entry] = []
            for domain in candidates {
                guard let sequences = state.byDomain[domain] else { continue }
                // The index holds the cookies of exactly this domain, which the host is or lies under: a
                // domain cookie matches; a host-only cookie only when the domain is the host itself.
                let isHost = domain == candidates[0]
                for sequence in sequences {
                    guard let entry = state.entries[sequence] else { continue }
                    let cookie = entry.cookie
                    if (isHost || !cookie.isHostOnly) && !cookie.isExpired(at: now)
                        && (isSecureScheme || !cookie.isSecure)
                        && CookieMatching.pathMatches(requestPath: path, cookiePath: cookie.path)
                        && Self.portMatches(cookie, port: port)
                    {
                        found.append(entry)
                    }
                }
            }
            return found
        }
        return
            matching.map { entry -> (length: Int, entry: Entry) in (entry.cookie.path.utf8.count, entry) }
            .sorted { (lhs: (length: Int, entry: Entry), rhs: (length: Int, entry: Entry)) -> Bool in
                lhs.length != rhs.length ? lhs.length > rhs.length : lhs.entry.sequence < rhs.entry.sequence
            }
            .map { $0.entry.cookie }
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
        // The stored Secure cookies, read once per call, by name: listing (and sorting) the whole storage for each
        // cookie made a response with thousands of cookies cost seconds on a network thread. The cookies stored
        // below cannot add one: a non-secure origin cannot set a Secure cookie.
        let secureByName: [String: [HTTPCookie]] =
            fromSecureOrigin ? [:] : Dictionary(grouping: (self.cookies ?? []).filter(\.isSecure), by: \.name)
        for cookie in cookies where Self.domainMatches(cookie, host: host) {
            // RFC 6265bis §5.7: a non-secure origin can neither set a Secure cookie nor overwrite or shadow one.
            if !fromSecureOrigin
                && (cookie.isSecure || Self.shadowsSecureCookie(cookie, among: secureByName[cookie.name] ?? []))
            {
                continue
            }
            setCookie(cookie)
        }
    }

    /// Whether one of `stored` (the stored `Secure` cookies named like `cookie`) would be overwritten or shadowed by
    /// `cookie`.
    private static func shadowsSecureCookie(_ cookie: HTTPCookie, among stored: [HTTPCookie]) -> Bool {
        stored.contains { stored in
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

    private static func domainMatches(_ cookie: HTTPCookie, host: String) -> Bool {
        cookie.isHostOnly
            ? HeaderName.equal(cookie.domain, host) : CookieMatching.domainMatches(host: host, domain: cookie.domain)
    }
}

private let processCookieStorage: HTTPCookieStorage = {
    SharedStoreUse.record(.cookies)
    let storage = HTTPCookieStorage(persistentIn: StoreLocation.dataFolder())
    // FoundationNetworking's cookies come over once, into a jar that had nothing yet.
    if storage.startsFresh, let path = FoundationCookieFile.defaultPath() {
        storage.importFoundationCookies(fromFileAt: path)
    }
    return storage
}()
private let groupCookieStorages = Mutex<[String: HTTPCookieStorage]>([:])
