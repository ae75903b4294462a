import CourierHTTP
import Foundation

/// Adds the session's `HTTPAdditionalHeaders` (the request's own values win; reserved names are ignored) and
/// the defaults Darwin sends: `Accept`, `Accept-Encoding: gzip, deflate, br` (decoded automatically), a
/// `User-Agent`, and a form `Content-Type` for a `POST` body without one.
struct HeaderDefaultsStage: RequestStage {
    static let userAgent = "courier/1.0 (Linux; SwiftNIO)"

    func immediate(_ original: URLRequest, in context: StageContext) throws(TransferError) -> RequestStep? {
        // A task's request has them from its creation (``URLSessionTask``); a redirect's request, or one a delegate
        // or a protocol made, may not: it gets them again, but for the credentials, which the redirect kept for the
        // same origin and removed for another.
        var request =
            context.settings.addingAdditionalHeaders(to: original, includingCredentials: context.redirectCount == 0)
            ?? original
        let addsAccept = request.value(forHTTPHeaderField: "Accept") == nil
        let addsEncoding = request.value(forHTTPHeaderField: "Accept-Encoding") == nil
        let addsAgent = request.value(forHTTPHeaderField: "User-Agent") == nil
        let addsFormType = Self.needsFormContentType(request, upload: context.uploadBody)
        let added = (addsAccept ? 1 : 0) + (addsEncoding ? 1 : 0) + (addsAgent ? 1 : 0) + (addsFormType ? 1 : 0)
        guard added > 0 else { return .proceed(request) }
        // One allocation for the fields added, not one per growth of the array.
        request.headerFields.reserveCapacity(request.headerFields.count + added)
        // Constant values, valid by construction: set without `setValue`'s check of each value.
        if addsAccept { request.headerFields["Accept"] = "*/*" }
        if addsEncoding { request.headerFields["Accept-Encoding"] = "gzip, deflate, br" }
        if addsAgent { request.headerFields["User-Agent"] = Self.userAgent }
        if addsFormType { request.headerFields["Content-Type"] = "application/x-www-form-urlencoded" }
        return .proceed(request)
    }

    /// Whether the request is a `POST` whose body goes without a `Content-Type`: Darwin's loader then sends
    /// `application/x-www-form-urlencoded`, the HTML form default, and FoundationNetworking does the same for
    /// `httpBody` and streams (its test suite checks it). Servers that parse form bodies rely on it. The body is the
    /// request's `httpBody` with bytes, its `httpBodyStream`, or an upload task's data, file or stream: Darwin sends
    /// the form type with `uploadTask(with:from:)` too (a CFNetwork capture in Alamofire's issue 553, whose multipart
    /// uploads went out as forms until it set the type itself); FoundationNetworking does not for uploads.
    static func needsFormContentType(_ request: URLRequest, upload: UploadBody?) -> Bool {
        guard request.httpMethod == "POST", request.value(forHTTPHeaderField: "Content-Type") == nil else {
            return false
        }
        switch upload {
        case .data(let data)?: return !data.isEmpty
        case .file(let url)?: return ((try? FileBodySource.length(of: url)) ?? 0) > 0
        case .streamed?: return true
        case nil: break
        }
        if let body = request.httpBody { return !body.isEmpty }
        return request.httpBodyStream != nil
    }
}
