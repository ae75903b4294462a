import CourierHTTP
import Foundation

/// Rejects requests the engine cannot run: no URL, no host, or a scheme other than http and https (and Courier's
/// `http+unix` and `https+unix`, whose host is a socket path).
struct URLValidationStage: RequestStage {
    func immediate(_ request: URLRequest, in context: StageContext) throws(TransferError) -> RequestStep? {
        guard let url = request.url else {
            // Darwin reports a request without a URL as an unsupported URL.
            throw .unsupportedURL("unsupported URL: the request has no URL")
        }
        guard let scheme = url.lowercasedScheme else {
            throw .unsupportedURL("the URL \(url.textWithoutCredentials()) has no scheme")
        }
        switch scheme {
        case "http", "https", "http+unix", "https+unix":
            break
        case "ws", "wss":
            throw .unsupportedURL("WebSocket URLs need a webSocketTask")
        default:
            throw .unsupportedURL("the scheme \(scheme) is not supported")
        }
        // Percent-encoded: whether there is a host does not need it decoded.
        guard let host = url.host(percentEncoded: true), !host.isEmpty else {
            throw .badURL("the URL \(url.textWithoutCredentials()) has no host")
        }
        return .proceed(request)
    }
}
