import CourierHTTP
import Foundation

/// Cache storage (response side): will store cacheable responses (and ask `willCacheResponse`). Courier has no
/// HTTP cache yet, so nothing is stored.
struct CacheStorageStage: ResponseStage {
    func immediate(_ response: URLResponse, in context: StageContext) throws(TransferError) -> ResponseStep? {
        .proceed(response)
    }
}
