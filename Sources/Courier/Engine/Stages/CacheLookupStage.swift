import CourierHTTP
import Foundation

/// The cache lookup (request side), for the cache-only policies so far: with `.returnCacheDataElseLoad` or
/// `.returnCacheDataDontLoad` (the request's policy, or the configuration's `requestCachePolicy` when the request
/// uses `.useProtocolCachePolicy`), a response in the session's `urlCache` for the request answers it without the
/// network, stale or not, as on Darwin; with nothing cached, `.returnCacheDataDontLoad` fails the task with
/// `URLError.resourceUnavailable` and `.returnCacheDataElseLoad` loads.
///
/// Not yet: answering or revalidating by HTTP freshness under `.useProtocolCachePolicy` (the rules are in
/// `CourierHTTP/Cache`), and storing responses; a response is in the cache only when the app stored it.
///
/// Courier's own `URLCache` is read at once; an app's subclass is user code, so the stage then waits.
struct CacheLookupStage: RequestStage {
    func immediate(_ request: URLRequest, in context: StageContext) throws(TransferError) -> RequestStep? {
        guard Self.policy(of: request, in: context).answersFromCache, let cache = context.configuration.urlCache
        else { return .proceed(request) }
        guard type(of: cache) == URLCache.self else { return nil }
        return try Self.lookUp(request, in: cache, context: context)
    }

    func process(_ request: URLRequest, in context: StageContext) async throws(TransferError) -> RequestStep {
        guard Self.policy(of: request, in: context).answersFromCache, let cache = context.configuration.urlCache
        else { return .proceed(request) }
        return try Self.lookUp(request, in: cache, context: context)
    }

    private static func lookUp(_ request: URLRequest, in cache: URLCache, context: StageContext) throws(TransferError)
        -> RequestStep
    {
        if let cached = cache.cachedResponse(for: request) {
            return .respond(CachedResponseSource(cached))
        }
        guard policy(of: request, in: context) == .returnCacheDataDontLoad else { return .proceed(request) }
        throw .resourceUnavailable("nothing is cached for \(request.url?.absoluteString ?? "the request")")
    }

    static func policy(of request: URLRequest, in context: StageContext) -> URLRequest.CachePolicy {
        request.cachePolicy == .useProtocolCachePolicy ? context.settings.cachePolicy : request.cachePolicy
    }
}

extension URLRequest.CachePolicy {
    /// The policies that take a cached response whatever its age.
    fileprivate var answersFromCache: Bool {
        self == .returnCacheDataElseLoad || self == .returnCacheDataDontLoad
    }
}
