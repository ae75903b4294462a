import CourierHTTP
import Foundation

/// What `downloadTask(withResumeData:)` was given: decoded, validated resume data and the request to send, or
/// the reason it cannot be used (the task then fails when resumed).
enum DownloadResumeState: Sendable {
    /// The decoded resume data.
    case readable(ResumeData)
    /// Why the resume data cannot be used.
    case unreadable(TransferError)

    /// Decodes `data`; never throws, so the factory method can always return a task.
    ///
    /// Resume data that cannot be read fails the task with `unsupportedURL`, as Darwin fails it (an Apple engineer
    /// made swift-corelibs-foundation "act as Darwin does when invalid data is fed to these methods", and its test
    /// expects that code): there is no URL to resume. Readable resume data that does not fit its partial file fails
    /// later, when resumed, with `cannotDecodeRawData` or `cannotOpenFile`.
    static func decode(_ data: Data) -> DownloadResumeState {
        do {
            return .readable(try ResumeData(decoding: data))
        } catch {
            return .unreadable(.unsupportedURL("the resume data cannot be read: \(error.detail)"))
        }
    }

    /// The decoded resume data, when it could be read.
    var resumeData: ResumeData? {
        guard case .readable(let data) = self else { return nil }
        return data
    }

    /// Why the resume data cannot be used, when it cannot.
    var error: TransferError? {
        guard case .unreadable(let error) = self else { return nil }
        return error
    }

    /// The request to resume with: the stored current request, without any range fields of its own.
    var request: URLRequest? {
        guard let stored = resumeData?.currentRequest else { return nil }
        return Self.urlRequest(stored)
    }

    /// The stored original request.
    var originalRequest: URLRequest? {
        resumeData.map { Self.urlRequest($0.originalRequest) }
    }

    static func urlRequest(_ stored: ResumeData.Request) -> URLRequest {
        var request = URLRequest(url: stored.url, timeoutInterval: stored.timeoutInterval)
        request.httpMethod = stored.method
        request.httpShouldHandleCookies = stored.httpShouldHandleCookies
        for (name, value) in stored.headers where !isRangeField(name) {
            request.setValue(value, forHTTPHeaderField: name)
        }
        return request
    }

    /// The request as resume data stores it (range fields are Courier's own and are added again on resume).
    static func stored(_ request: URLRequest?, fallbackURL: URL) throws(TransferError) -> ResumeData.Request {
        let headers = (request?.allHTTPHeaderFields ?? [:]).filter { !isRangeField($0.key) }
        return try ResumeData.Request(
            url: request?.url ?? fallbackURL,
            method: request?.httpMethod ?? "GET",
            headers: headers,
            timeoutInterval: request?.timeoutInterval ?? 60,
            httpShouldHandleCookies: request?.httpShouldHandleCookies ?? true
        )
    }

    private static func isRangeField(_ name: String) -> Bool {
        HeaderName.equal(name, "Range") || HeaderName.equal(name, "If-Range")
    }
}
