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

    /// The URLs whose stored responses a successful unsafe request invalidates: its own, and its `Location` and
    /// `Content-Location` when they are on the same origin.
    static func invalidatedURLs(method: String, response: HTTPURLResponse) -> [URL] {
        let safe: Set<String> = ["GET", "HEAD", "OPTIONS", "TRACE"]
        guard !safe.contains(method), (200..<400).contains(response.statusCode), let url = response.url else {
            return []
        }
        var urls = [url]
        for name in ["Location", "Content-Location"] {
            guard let value = response.value(forHTTPHeaderField: name),
                let target = URL(string: value, relativeTo: url)?.absoluteURL,
                target.scheme?.lowercased() == url.scheme?.lowercased(),
                target.host?.lowercased() == url.host?.lowercased(), target.port == url.port
            else { continue }
            urls.append(target)
        }
        return urls
    }
}
