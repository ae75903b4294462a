import CourierHTTP
import Foundation

/// Stores the cookies of every response, redirects included, before the response side goes on, so that a
/// followed redirect already carries them (see ``CookieStage/storeCookies(from:configuration:request:)``).
/// An app's `HTTPCookieStorage` subclass is called on a Swift concurrency thread, never on an event loop.
struct CookieStorageStage: ResponseStage {
    func immediate(_ response: URLResponse, in context: StageContext) throws(TransferError) -> ResponseStep? {
        guard let http = response as? HTTPURLResponse, http.headerFields["Set-Cookie"] != nil,
            let storage = context.configuration.httpCookieStorage
        else { return .proceed(response) }
        guard CookieStage.isBuiltIn(storage) else { return nil }
        CookieStage.storeCookies(from: http, configuration: context.configuration, request: context.currentRequest)
        return .proceed(response)
    }

    func process(_ response: URLResponse, in context: StageContext) async throws(TransferError) -> ResponseStep {
        if let http = response as? HTTPURLResponse {
            CookieStage.storeCookies(from: http, configuration: context.configuration, request: context.currentRequest)
        }
        return .proceed(response)
    }
}
