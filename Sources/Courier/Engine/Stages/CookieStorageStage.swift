import CourierHTTP
import Foundation

/// Stores the cookies of every response, redirects included, before the response side goes on, so that a
/// followed redirect already carries them (see ``CookieStage/storeCookies(from:configuration:request:)``).
/// An app's `HTTPCookieStorage` subclass is called on a Swift concurrency thread, never on an event loop.
struct CookieStorageStage: ResponseStage {
    /// Nothing to store: no cookie storage, or no `Set-Cookie` field.
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
        if let http = response as? HTTPURLResponse {
            CookieStage.storeCookies(from: http, configuration: context.configuration, request: context.currentRequest)
        }
        return .proceed(response)
    }
}
