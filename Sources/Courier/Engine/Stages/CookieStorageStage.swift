import CourierHTTP
import Foundation

/// Stores the cookies of every response, redirects included, before the response side goes on, so that a
/// followed redirect already carries them (see ``CookieStage/storeCookies(from:configuration:request:)``).
/// An app's `HTTPCookieStorage` subclass is called on a Swift concurrency thread, never on an event loop.
///
/// A response served from the `URLCache` (a fresh hit, or the stored response a `304` refreshed) stores nothing:
/// its `Set-Cookie` fields were stored when it came from the network, and storing them again would bring back a
/// cookie deleted since (a logout's `Max-Age=0`) or put an old session or CSRF token over the one the server set
/// later. Browsers keep `Set-Cookie` out of their caches for that reason, and FoundationNetworking stores cookies
/// from network responses only.
struct CookieStorageStage: ResponseStage {
    /// Nothing to store: no cookie storage, a response from the cache, or no `Set-Cookie` field.
    static func passes(_ response: URLResponse, _ facts: ResponseStageFacts) -> Bool {
        !facts.storesCookies || (response as? HTTPURLResponse)?.headerFields["Set-Cookie"] == nil
    }

    func immediate(_ response: URLResponse, in context: StageContext) throws(TransferError) -> ResponseStep? {
        guard !Self.passes(response, ResponseStageFacts(context)), let http = response as? HTTPURLResponse,
            let storage = context.settings.cookieStorage
        else { return .proceed(response) }
        guard CookieStage.isBuiltIn(storage) else { return nil }
        CookieStage.storeCookies(from: http, configuration: context.configuration, request: context.currentRequest)
        return .proceed(response)
    }

    func process(_ response: URLResponse, in context: StageContext) async throws(TransferError) -> ResponseStep {
        // Only reached when `immediate` found something to store (a network response with `Set-Cookie`).
        if let http = response as? HTTPURLResponse {
            CookieStage.storeCookies(from: http, configuration: context.configuration, request: context.currentRequest)
        }
        return .proceed(response)
    }
}
