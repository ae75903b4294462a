import CourierHTTP
import Foundation

/// Adds the session's `HTTPAdditionalHeaders` (the request's own values win; reserved names are ignored) and
/// the defaults Darwin sends: `Accept`, `Accept-Encoding: gzip, deflate, br` (decoded automatically) and a
/// `User-Agent`.
struct HeaderDefaultsStage: RequestStage {
    static let userAgent = "courier/1.0 (Linux; SwiftNIO)"

    /// The three defaults, in the order they are added one by one below. A request without fields of its own (most
    /// GETs) shares this storage instead of allocating an array for them: 144 bytes less per queued request.
    static let defaultFields: HeaderFieldDictionary = [
        "Accept": "*/*", "Accept-Encoding": "gzip, deflate, br", "User-Agent": userAgent,
    ]

    func immediate(_ original: URLRequest, in context: StageContext) throws(TransferError) -> RequestStep? {
        // A task's request has them from its creation (``URLSessionTask``); a redirect's request, or one a delegate
        // or a protocol made, may not: it gets them again, but for the credentials, which the redirect kept for the
        // same origin and removed for another.
        var request =
            context.settings.addingAdditionalHeaders(to: original, includingCredentials: context.redirectCount == 0)
            ?? original
        if request.headerFields.isEmpty {
            request.headerFields = Self.defaultFields
            return .proceed(request)
        }
        let addsAccept = request.value(forHTTPHeaderField: "Accept") == nil
        let addsEncoding = request.value(forHTTPHeaderField: "Accept-Encoding") == nil
        let addsAgent = request.value(forHTTPHeaderField: "User-Agent") == nil
        let added = (addsAccept ? 1 : 0) + (addsEncoding ? 1 : 0) + (addsAgent ? 1 : 0)
        guard added > 0 else { return .proceed(request) }
        // One allocation for the fields added, not one per growth of the array.
        request.headerFields.reserveCapacity(request.headerFields.count + added)
        // Constant values, valid by construction: set without `setValue`'s check of each value.
        if addsAccept { request.headerFields["Accept"] = "*/*" }
        if addsEncoding { request.headerFields["Accept-Encoding"] = "gzip, deflate, br" }
        if addsAgent { request.headerFields["User-Agent"] = Self.userAgent }
        return .proceed(request)
    }
}
