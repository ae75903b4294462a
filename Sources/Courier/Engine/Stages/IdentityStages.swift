import CourierHTTP
import Foundation

/// The cache lookup (request side): will answer from `URLCache` or make the request conditional, by the
/// request's cache policy. Courier has no HTTP cache yet, so it passes every request on unchanged.
struct CacheLookupStage: RequestStage {
    func immediate(_ request: URLRequest, in context: StageContext) throws(TransferError) -> RequestStep? {
        .proceed(request)
    }
}

/// Cache storage (response side): will store cacheable responses (and ask `willCacheResponse`). Courier has no
/// HTTP cache yet, so nothing is stored.
struct CacheStorageStage: ResponseStage {
    func immediate(_ response: URLResponse, in context: StageContext) throws(TransferError) -> ResponseStep? {
        .proceed(response)
    }
}
