import Foundation

/// A stored response as the cache rules see it: its status, header fields and when it was requested and received.
public struct StoredResponse: Sendable {
    public var status: Int
    public var headers: HeaderFieldDictionary
    /// When the request that got it was sent.
    public var requestTime: Date
    /// When the response was received.
    public var responseTime: Date

    public init(status: Int, headers: HeaderFieldDictionary, requestTime: Date, responseTime: Date) {
        self.status = status
        self.headers = headers
        self.requestTime = requestTime
        self.responseTime = responseTime
    }

    var cacheControl: CacheControl { CacheControl(headers["Cache-Control"].map { [$0] } ?? []) }
    func date(_ name: String) -> Date? { headers[name].flatMap(CookieDate.parse) }
}

/// What to do with a request, given what the cache holds (OkHttp's `CacheStrategy` is the model).
public enum CacheDecision: Sendable, Equatable {
    /// Answer with the stored response.
    case useStored
    /// Ask the server whether the stored response is still current: send these conditional fields; a 304 keeps the
    /// stored body.
    case validate(ifNoneMatch: String?, ifModifiedSince: String?)
    /// Load from the network (and store the answer if it may be stored).
    case network
    /// `only-if-cached` and nothing usable is stored: the request fails (Darwin: `resourceUnavailable`).
    case unsatisfiable
}

/// The rules of RFC 9111 for a private cache, as pure functions with the clock passed in.
public enum CacheRules {
    /// Statuses a cache may store with heuristic freshness (RFC 9110 §15.1).
    public static let heuristicallyCacheable: Set<Int> = [200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501]

    /// Whether a response to `method` may be stored (RFC 9111 §3): a GET, a final status the cache understands (a
    /// partial `206` is not stored), no `no-store` in the request or the response, an `Authorization` request only
    /// when the response allows it (§3.5), and explicit freshness or a heuristically cacheable status.
    public static func isStorable(
        method: String, requestHeaders: HeaderFieldDictionary, status: Int, responseHeaders: HeaderFieldDictionary
    ) -> Bool {
        guard method == "GET", (200..<600).contains(status), status != 206 else { return false }
        let request = CacheControl(requestHeaders["Cache-Control"].map { [$0] } ?? [])
        let response = CacheControl(responseHeaders["Cache-Control"].map { [$0] } ?? [])
        guard !request.noStore, !response.noStore else { return false }
        if requestHeaders["Authorization"] != nil {
            guard response.isPublic || response.mustRevalidate || response.sharedMaxAge != nil else { return false }
        }
        let explicit = response.maxAge != nil || responseHeaders["Expires"] != nil || response.isPublic
        return explicit || heuristicallyCacheable.contains(status)
    }

    /// How long the response is fresh (RFC 9111 §4.2.1, private cache: `s-maxage` does not apply): `max-age`, else
    /// `Expires` minus `Date` (an invalid `Expires` means already stale), else 10% of the time since
    /// `Last-Modified` for a heuristically cacheable status, else nothing.
    public static func freshnessLifetime(of response: StoredResponse) -> TimeInterval {
        let control = response.cacheControl
        if let maxAge = control.maxAge { return TimeInterval(maxAge) }
        let date = response.date("Date") ?? response.responseTime
        if let expiresText = response.headers["Expires"] {
            guard let expires = CookieDate.parse(expiresText) else { return 0 }
            return max(0, expires.timeIntervalSince(date))
        }
        if heuristicallyCacheable.contains(response.status), let modified = response.date("Last-Modified") {
            return max(0, date.timeIntervalSince(modified) / 10)
        }
        return 0
    }

    /// The response's age now (RFC 9111 §4.2.3).
    public static func currentAge(of response: StoredResponse, now: Date) -> TimeInterval {
        let date = response.date("Date") ?? response.responseTime
        let apparentAge = max(0, response.responseTime.timeIntervalSince(date))
        let ageValue = response.headers["Age"].flatMap(CacheControl.seconds).map(TimeInterval.init) ?? 0
        let responseDelay = max(0, response.responseTime.timeIntervalSince(response.requestTime))
        let correctedInitialAge = max(apparentAge, ageValue + responseDelay)
        let residentTime = max(0, now.timeIntervalSince(response.responseTime))
        return correctedInitialAge + residentTime
    }

    /// What to do with a request whose header fields are `requestHeaders` when `stored` is what the cache holds
    /// for it (RFC 9111 §4 and the request directives of §5.2.1; `Pragma: no-cache` counts as `no-cache` when the
    /// request has no `Cache-Control`).
    public static func decide(requestHeaders: HeaderFieldDictionary, stored: StoredResponse?, now: Date)
        -> CacheDecision
    {
        let request = CacheControl(requestHeaders["Cache-Control"].map { [$0] } ?? [])
        let pragmaNoCache =
            requestHeaders["Cache-Control"] == nil
            && (requestHeaders["Pragma"]?.lowercased().contains("no-cache") ?? false)
        guard let stored else { return request.onlyIfCached ? .unsatisfiable : .network }
        let response = stored.cacheControl
        let validation = validators(of: stored)
        if request.noCache || pragmaNoCache || response.noCache {
            if request.onlyIfCached { return .unsatisfiable }
            return validation ?? .network
        }
        let age = currentAge(of: stored, now: now)
        var lifetime = freshnessLifetime(of: stored)
        if let maxAge = request.maxAge { lifetime = min(lifetime, TimeInterval(maxAge)) }
        let minFresh = TimeInterval(request.minFresh ?? 0)
        let allowedStaleness = response.mustRevalidate ? 0 : TimeInterval(request.maxStale ?? 0)
        if age + minFresh < lifetime + allowedStaleness { return .useStored }
        if request.onlyIfCached { return .unsatisfiable }
        return validation ?? .network
    }

    /// The conditional fields that revalidate `stored`: its `ETag` as `If-None-Match`, its `Last-Modified` as
    /// `If-Modified-Since`; `nil` without validators.
    public static func validators(of stored: StoredResponse) -> CacheDecision? {
        let etag = stored.headers["ETag"]
        let modified = stored.headers["Last-Modified"]
        guard etag != nil || modified != nil else { return nil }
        return .validate(ifNoneMatch: etag, ifModifiedSince: modified)
    }
}

extension CacheRules {
    /// Methods a cache need not invalidate for (RFC 9110 §9.2.1).
    static let safeMethods: Set<String> = ["GET", "HEAD", "OPTIONS", "TRACE"]

    /// The URLs whose stored responses a response to an unsafe request invalidates (RFC 9111 §4.4, on a non-error
    /// status, 2xx or 3xx): the request's own `url`, and its `Location` and `Content-Location` (relative to `url`)
    /// when they are on the same origin; another origin's entries are not a server's to remove.
    public static func invalidatedURLs(
        method: String, status: Int, url: URL, location: String?, contentLocation: String?
    ) -> [URL] {
        guard !safeMethods.contains(method.uppercased()), (200..<400).contains(status) else { return [] }
        var urls = [url]
        for value in [location, contentLocation] {
            // Same origin with the scheme's default port filled in: `https://a.test:443/x` is `https://a.test/x`'s.
            guard let value, let target = URL(string: value, relativeTo: url)?.absoluteURL,
                RedirectPolicy.isSameOrigin(target, url)
            else { continue }
            urls.append(target)
        }
        return urls
    }
}
