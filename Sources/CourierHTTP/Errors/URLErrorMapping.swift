import Foundation

/// The one mapping from Courier's internal failures to the `URLError` values the public API reports.
///
/// Every error that crosses the public boundary goes through here so that it carries Darwin's code, a readable
/// description, and the failing URL under `NSURLErrorFailingURLErrorKey` and
/// `failingURLStringKey`.
public enum URLErrorMapping {
    /// The value of Darwin's `NSURLErrorFailingURLStringErrorKey` (deprecated in swift-corelibs-foundation, but
    /// still the key Darwin code reads).
    public static let failingURLStringKey = "NSErrorFailingURLStringKey"

    /// Builds the `URLError` for `code`, naming the failing URL.
    public static func urlError(
        _ code: URLError.Code,
        failingURL: URL?,
        description: String? = nil,
        extraUserInfo: [String: Any] = [:]
    ) -> URLError {
        var userInfo = extraUserInfo
        if let failingURL {
            userInfo[NSURLErrorFailingURLErrorKey] = failingURL
            userInfo[failingURLStringKey] = failingURL.absoluteString
        }
        userInfo[NSLocalizedDescriptionKey] = description ?? defaultDescription(for: code)
        return URLError(code, userInfo: userInfo)
    }

    /// Turns any error met while running a task into the `URLError` the task reports.
    public static func urlError(from error: any Error, failingURL: URL?) -> URLError {
        if let urlError = error as? URLError {
            if urlError.userInfo[NSURLErrorFailingURLErrorKey] != nil || failingURL == nil {
                return urlError
            }
            var info = urlError.userInfo
            info[NSURLErrorFailingURLErrorKey] = failingURL
            info[failingURLStringKey] = failingURL?.absoluteString
            return URLError(urlError.code, userInfo: info)
        }
        if let transfer = error as? TransferError {
            return urlError(transfer.urlErrorCode, failingURL: failingURL, description: transfer.detail)
        }
        if error is CancellationError {
            return urlError(.cancelled, failingURL: failingURL)
        }
        return urlError(.unknown, failingURL: failingURL, description: String(describing: error))
    }

    /// Darwin-like default descriptions.
    static func defaultDescription(for code: URLError.Code) -> String {
        switch code {
        case .cancelled: return "cancelled"
        case .badURL: return "unsupported URL"
        case .unsupportedURL: return "unsupported URL"
        case .cannotFindHost: return "A server with the specified hostname could not be found."
        case .cannotConnectToHost: return "Could not connect to the server."
        case .notConnectedToInternet: return "The Internet connection appears to be offline."
        case .timedOut: return "The request timed out."
        case .networkConnectionLost: return "The network connection was lost."
        case .badServerResponse: return "The server returned a bad response."
        case .cannotParseResponse: return "The response could not be parsed."
        case .secureConnectionFailed:
            return "An SSL error has occurred and a secure connection to the server cannot be made."
        case .serverCertificateUntrusted: return "The certificate for this server is invalid."
        case .cannotDecodeContentData: return "The content could not be decoded."
        case .httpTooManyRedirects: return "too many HTTP redirects"
        default: return "The operation couldn't be completed. (URLError \(code.rawValue))"
        }
    }
}
