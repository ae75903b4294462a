import CourierHTTP
import Foundation

/// Cache invalidation (response side, before redirects): a successful unsafe request (`POST`, `PUT`, `DELETE`,
/// `PATCH`, …) removes the stored response of its URL, and of its `Location` and `Content-Location` on the same
/// origin (RFC 9111 §4.4: on any non-error status, 2xx or 3xx).
///
/// It runs before ``RedirectStage``, which ends the side with a follow-up for a redirect: the usual answer to a form's
/// `POST` is a `303` to the updated resource (Post/Redirect/Get), and the `GET` that follows must reach the server,
/// not the response stored before the update.
struct CacheInvalidationStage: ResponseStage {
    /// The task does not cache, or the response is not HTTP.
    static func passes(_ response: URLResponse, _ facts: ResponseStageFacts) -> Bool {
        !facts.caches || !(response is HTTPURLResponse)
    }

    /// Removing waits: the cache may be the app's subclass, and the disk tier blocks.
    func immediate(_ response: URLResponse, in context: StageContext) throws(TransferError) -> ResponseStep? {
        guard !Self.passes(response, ResponseStageFacts(context)), let http = response as? HTTPURLResponse else {
            return .proceed(response)
        }
        return Self.invalidatedURLs(method: Self.method(of: context), response: http).isEmpty ? .proceed(response) : nil
    }

    func process(_ response: URLResponse, in context: StageContext) async throws(TransferError) -> ResponseStep {
        guard let transaction = context.cache, let http = response as? HTTPURLResponse else {
            return .proceed(response)
        }
        for url in Self.invalidatedURLs(method: Self.method(of: context), response: http) {
            transaction.cache.removeCachedResponse(for: URLRequest(url: url))
        }
        return .proceed(response)
    }

    private static func method(of context: StageContext) -> String {
        (context.currentRequest.httpMethod ?? "GET").uppercased()
    }

    /// The URLs whose stored responses `response` to a `method` request invalidates (``CacheRules``' rule).
    static func invalidatedURLs(method: String, response: HTTPURLResponse) -> [URL] {
        guard let url = response.url else { return [] }
        return CacheRules.invalidatedURLs(
            method: method, status: response.statusCode, url: url,
            location: response.value(forHTTPHeaderField: "Location"),
            contentLocation: response.value(forHTTPHeaderField: "Content-Location"))
    }
}
