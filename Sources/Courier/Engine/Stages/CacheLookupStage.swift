import CourierHTTP
import Foundation

/// The cache lookup (request side): answers a GET from the session's `urlCache`, sends it conditionally, or lets it
/// go to the network, by the request's cache policy (the configuration's `requestCachePolicy` when the request uses
/// `.useProtocolCachePolicy`), as on Darwin:
/// - `.useProtocolCachePolicy`: RFC 9111 (``CacheRules``): a fresh stored response answers; a stale one with a
///   validator is revalidated with `If-None-Match` / `If-Modified-Since` (a `304` then serves it, see
///   ``CacheStorageStage``); `only-if-cached` with nothing usable fails with `URLError.resourceUnavailable`.
/// - `.reloadRevalidatingCacheData`: a stored response is always revalidated first.
/// - `.returnCacheDataElseLoad` / `.returnCacheDataDontLoad`: a stored response answers whatever its age; with
///   none, the first loads and the second fails with `URLError.resourceUnavailable` (also for a request the cache
///   never answers, such as a `POST`: it never goes out).
/// - `.reloadIgnoringLocalCacheData` (and `…LocalAndRemote…`): the network, always.
///
/// A stored response answers only requests that agree on the fields its `Vary` named. Requests with their own
/// conditional or range fields, other methods, and download tasks bypass the cache. The memory tier is read at
/// once; the disk tier and an app's `URLCache` subclass (user code) make the stage wait, off the event loops.
struct CacheLookupStage: RequestStage {
    func immediate(_ request: URLRequest, in context: StageContext) throws(TransferError) -> RequestStep? {
        guard let transaction = context.cache else { return .proceed(request) }
        if let refreshed = transaction.takeServeNext() {
            return .respond(InMemoryResponseSource(refreshed))
        }
        let policy = Self.policy(of: request, in: context)
        guard Self.consultsCache(request, policy: policy) else {
            // `.returnCacheDataDontLoad` never loads (Apple: "no attempt is made to load the data from the
            // originating source"; the originating source is "Ignored"): a request the cache cannot answer (another
            // method, the app's own conditional or range fields) fails as a miss does, rather than going out.
            if policy == .returnCacheDataDontLoad {
                throw .resourceUnavailable(
                    "the cache policy does not load, and the cache cannot answer \(request.httpMethod ?? "GET") "
                        + (request.url?.textWithoutCredentials() ?? "the request"))
            }
            transaction.sending(request, validating: nil, at: Date())
            return .proceed(request)
        }
        guard type(of: transaction.cache) == URLCache.self else { return nil }
        switch transaction.cache.memoryLookup(for: request) {
        case .hit(let cached):
            return try Self.answer(request, cached: cached, policy: policy, transaction: transaction)
        case .none:
            return try Self.answer(request, cached: nil, policy: policy, transaction: transaction)
        case .miss:
            return nil
        }
    }

    func process(_ request: URLRequest, in context: StageContext) async throws(TransferError) -> RequestStep {
        guard let transaction = context.cache else { return .proceed(request) }
        let policy = Self.policy(of: request, in: context)
        let cached = transaction.cache.cachedResponse(for: request)
        return try Self.answer(request, cached: cached, policy: policy, transaction: transaction)
    }

    static func policy(of request: URLRequest, in context: StageContext) -> URLRequest.CachePolicy {
        request.cachePolicy == .useProtocolCachePolicy ? context.settings.cachePolicy : request.cachePolicy
    }

    /// Whether the cache has a say: a GET without conditional or range fields of its own, under a policy that
    /// reads the cache.
    static func consultsCache(_ request: URLRequest, policy: URLRequest.CachePolicy) -> Bool {
        guard (request.httpMethod ?? "GET").uppercased() == "GET" else { return false }
        switch policy {
        case .reloadIgnoringLocalCacheData, .reloadIgnoringLocalAndRemoteCacheData: return false
        default: break
        }
        let fields = request.headerFields
        return fields["If-None-Match"] == nil && fields["If-Modified-Since"] == nil && fields["If-Range"] == nil
            && fields["Range"] == nil && fields["If-Match"] == nil && fields["If-Unmodified-Since"] == nil
    }

    private static func answer(
        _ request: URLRequest, cached: CachedURLResponse?, policy: URLRequest.CachePolicy,
        transaction: CacheTransaction
    ) throws(TransferError) -> RequestStep {
        let now = Date()
        let usable = cached.flatMap { $0.metadata?.matches(request) == false ? nil : $0 }
        switch policy {
        case .returnCacheDataElseLoad, .returnCacheDataDontLoad:
            if let usable { return .respond(InMemoryResponseSource(usable)) }
            if policy == .returnCacheDataDontLoad {
                throw .resourceUnavailable(
                    "nothing is cached for " + (request.url?.textWithoutCredentials() ?? "the request"))
            }
            transaction.sending(request, validating: nil, at: now)
            return .proceed(request)
        case .reloadRevalidatingCacheData:
            guard let usable, let http = usable.response as? HTTPURLResponse,
                case .validate(let etag, let modified)? = CacheRules.validators(of: stored(http, usable))
            else {
                transaction.sending(request, validating: nil, at: now)
                return .proceed(request)
            }
            transaction.sending(request, validating: usable, at: now)
            return .proceed(conditional(request, ifNoneMatch: etag, ifModifiedSince: modified))
        default:
            var storedResponse: StoredResponse?
            if let usable, let http = usable.response as? HTTPURLResponse { storedResponse = stored(http, usable) }
            switch CacheRules.decide(requestHeaders: request.headerFields, stored: storedResponse, now: now) {
            case .useStored:
                if let usable { return .respond(InMemoryResponseSource(usable)) }
                transaction.sending(request, validating: nil, at: now)
                return .proceed(request)
            case .validate(let etag, let modified):
                transaction.sending(request, validating: usable, at: now)
                return .proceed(conditional(request, ifNoneMatch: etag, ifModifiedSince: modified))
            case .network:
                transaction.sending(request, validating: nil, at: now)
                return .proceed(request)
            case .unsatisfiable:
                throw .resourceUnavailable(
                    "only-if-cached, and nothing usable is cached for "
                        + (request.url?.textWithoutCredentials() ?? "the request"))
            }
        }
    }

    /// The stored response as the rules see it. One the app stored itself has no recorded times: its `Date` field
    /// stands for them, and without one it counts as received long ago (stale, so it is revalidated).
    static func stored(_ http: HTTPURLResponse, _ cached: CachedURLResponse) -> StoredResponse {
        if let metadata = cached.metadata { return metadata.storedResponse(of: http) }
        let date = http.value(forHTTPHeaderField: "Date").flatMap(CookieDate.parse) ?? .distantPast
        return StoredResponse(
            status: http.statusCode, headers: http.headerFields, requestTime: date, responseTime: date)
    }

    private static func conditional(_ request: URLRequest, ifNoneMatch: String?, ifModifiedSince: String?) -> URLRequest
    {
        var conditional = request
        if let ifNoneMatch { conditional.setValue(ifNoneMatch, forHTTPHeaderField: "If-None-Match") }
        if let ifModifiedSince { conditional.setValue(ifModifiedSince, forHTTPHeaderField: "If-Modified-Since") }
        return conditional
    }
}
