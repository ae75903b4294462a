import CourierHTTP
import Foundation

/// Cache storage (response side), as on Darwin:
/// - A storable response to a GET (RFC 9111 §3, ``CacheRules``) is recorded as its body arrives and stored in the
///   session's `urlCache` when it ends — after the delegate's `urlSession(_:dataTask:willCacheResponse:completionHandler:)`,
///   for data tasks with a delegate — unless the body outgrows ``URLCache/largestStoredBody`` (5% of the cache's
///   capacity) or the response says `Vary: *`.
/// - A `304` to the lookup's conditional request refreshes the stored response (its header fields updated, its body
///   kept, RFC 9111 §4.3.4) and the task is answered from the cache: the app sees the stored status, not `304`. A
///   `304` whose fields make the response unstorable (`no-store`) removes it instead.
///
/// Other methods are left to ``CacheInvalidationStage``, which runs before the redirect stage.
struct CacheStorageStage: ResponseStage {
    /// The task does not cache, or the response is not HTTP.
    static func passes(_ response: URLResponse, _ facts: ResponseStageFacts) -> Bool {
        !facts.caches || !(response is HTTPURLResponse)
    }

    func immediate(_ response: URLResponse, in context: StageContext) throws(TransferError) -> ResponseStep? {
        guard !Self.passes(response, ResponseStageFacts(context)), let transaction = context.cache,
            let http = response as? HTTPURLResponse
        else {
            return .proceed(response)
        }
        guard (context.currentRequest.httpMethod ?? "GET").uppercased() == "GET" else { return .proceed(response) }
        let attempt = transaction.attempt
        if http.statusCode == 304, attempt.validating != nil { return nil }
        if let recording = Self.recording(for: http, attempt: attempt, context: context) {
            transaction.record(recording)
        }
        return .proceed(response)
    }

    func process(_ response: URLResponse, in context: StageContext) async throws(TransferError) -> ResponseStep {
        guard let transaction = context.cache, let http = response as? HTTPURLResponse else {
            return .proceed(response)
        }
        guard (context.currentRequest.httpMethod ?? "GET").uppercased() == "GET" else { return .proceed(response) }
        let attempt = transaction.attempt
        guard http.statusCode == 304, let validating = attempt.validating,
            let refreshed = Self.refreshed(validating, by: http, requestTime: attempt.requestTime)
        else { return .proceed(response) }
        let request = attempt.request ?? context.currentRequest
        // The merged fields decide as a new response's would: a 304 that says `no-store` (or no longer allows a
        // response to this request) takes the stored one out, where it was kept, rewritten to memory and disk, and
        // used again. This request is still answered with it, as RFC 9111 §4.3.4 has the 304 complete it.
        if let merged = refreshed.response as? HTTPURLResponse,
            CacheRules.isStorable(
                method: "GET", requestHeaders: request.headerFields, status: merged.statusCode,
                responseHeaders: merged.headerFields)
        {
            transaction.cache.storeCachedResponse(refreshed, for: request)
        } else {
            transaction.cache.removeCachedResponse(for: request)
        }
        transaction.serve(refreshed)
        return .retry(context.currentRequest)
    }

    /// What to record for `response`, or `nil` when it is not to be stored.
    ///
    /// Only what the server sent is stored (Apple, `willCacheResponse`: "The provided response came from the server,
    /// rather than out of the cache"). A response the cache answered with is stored already: storing it again dropped
    /// its storage policy and user info, asked `willCacheResponse` again, and after a redirect filed it under the
    /// request the lookup recorded before the redirect (the redirecting URL's). A custom `URLProtocol`'s response is
    /// not cached (see the README).
    static func recording(
        for response: HTTPURLResponse,
        attempt: (validating: CachedURLResponse?, requestTime: Date, request: URLRequest?),
        context: StageContext
    ) -> CacheRecording? {
        guard let cache = context.cache?.cache, context.responseOrigin == .network else { return nil }
        let request = attempt.request ?? context.currentRequest
        // The policy in force, as the lookup reads it: a request that keeps `.useProtocolCachePolicy` takes the
        // configuration's `requestCachePolicy`, which a session-wide `…LocalAndRemote…` must not lose here.
        guard CacheLookupStage.policy(of: request, in: context) != .reloadIgnoringLocalAndRemoteCacheData,
            CacheRules.isStorable(
                method: "GET", requestHeaders: request.headerFields, status: response.statusCode,
                responseHeaders: response.headerFields),
            let varying = CacheMetadata.varyingFields(of: response, request: request)
        else { return nil }
        // Darwin stores successful responses only (Apple, `willCacheResponse`: "a status code in the 200–299
        // range"), stricter than RFC 9111: a `404` must not replace the stored page that `.returnCacheDataElseLoad`
        // and `.returnCacheDataDontLoad` answer with, and a `304` to the app's own conditional request (which the
        // lookup does not revalidate with) is no document: stored, it answered the next plain GET with no body.
        guard (200..<300).contains(response.statusCode) else { return nil }
        let limit = cache.largestStoredBody
        guard limit > 0, response.expectedContentLength <= Int64(limit) else { return nil }
        let metadata = CacheMetadata(requestTime: attempt.requestTime, responseTime: Date(), varyingFields: varying)
        return CacheRecording(request: request, response: response, metadata: metadata, limit: limit)
    }

    /// `stored` with the header fields of a `304` that revalidated it (all but the framing fields, which describe
    /// the empty `304` itself), and the times of this exchange.
    static func refreshed(_ stored: CachedURLResponse, by notModified: HTTPURLResponse, requestTime: Date)
        -> CachedURLResponse?
    {
        guard let http = stored.response as? HTTPURLResponse, let url = http.url else { return nil }
        let framing: Set<String> = [
            "content-length", "transfer-encoding", "connection", "keep-alive", "content-encoding",
        ]
        var pairs = http.headerFields.map { ($0.name, $0.value) }
        for field in notModified.headerFields where !framing.contains(field.name.lowercased()) {
            pairs.removeAll { $0.0.caseInsensitiveCompare(field.name) == .orderedSame }
            pairs.append((field.name, field.value))
        }
        let merged = HTTPURLResponse(
            url: url, statusCode: http.statusCode, httpVersion: http.httpVersion, headerFieldPairs: pairs)
        let metadata = CacheMetadata(
            requestTime: requestTime, responseTime: Date(), varyingFields: stored.metadata?.varyingFields ?? [:])
        return CachedURLResponse(
            response: merged, data: stored.data, userInfo: stored.userInfo, storagePolicy: stored.storagePolicy,
            metadata: metadata)
    }
}
