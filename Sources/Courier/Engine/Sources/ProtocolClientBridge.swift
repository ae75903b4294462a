import CourierHTTP
import Foundation

/// The `URLProtocolClient` a custom protocol reports to: each call becomes an event of its
/// ``ProtocolResponseSource``. Calls after the load ended (or for another protocol object) are ignored.
final class ProtocolClientBridge: NSObject, URLProtocolClient, @unchecked Sendable {
    private weak var source: ProtocolResponseSource?

    init(source: ProtocolResponseSource) {
        self.source = source
    }

    func urlProtocol(_ protocol: URLProtocol, wasRedirectedTo request: URLRequest, redirectResponse: URLResponse) {
        source?.enqueue(.redirect(request, redirectResponse))
    }

    func urlProtocol(_ protocol: URLProtocol, cachedResponseIsValid cachedResponse: CachedURLResponse) {
        source?.deliverCachedResponse(cachedResponse)
    }

    func urlProtocol(
        _ protocol: URLProtocol, didReceive response: URLResponse, cacheStoragePolicy policy: URLCache.StoragePolicy
    ) {
        source?.enqueue(.response(response))
    }

    func urlProtocol(_ protocol: URLProtocol, didLoad data: Data) {
        guard !data.isEmpty else { return }
        source?.enqueue(.data(data))
    }

    func urlProtocolDidFinishLoading(_ protocol: URLProtocol) {
        source?.enqueue(.finish)
    }

    func urlProtocol(_ protocol: URLProtocol, didFailWithError error: any Error) {
        // The task reports the protocol's own error, as on Darwin; the engine goes by its URLError code.
        source?.enqueue(.fail(Self.transferError(error).reporting(error)))
    }

    func urlProtocol(_ protocol: URLProtocol, didReceive challenge: URLAuthenticationChallenge) {
        guard let task = source?.challengedTask else {
            challenge.sender?.performDefaultHandling(for: challenge)
            return
        }
        ProtocolChallengeRelay.ask(about: challenge, for: task)
    }

    func urlProtocol(_ protocol: URLProtocol, didCancel challenge: URLAuthenticationChallenge) {
        // The delegate's answer, if it still comes, goes to a sender that no longer waits for it.
    }

    /// A protocol's error as the engine carries it: a `URLError` (or an `NSError` in `NSURLErrorDomain`) keeps its
    /// code and description; any other error becomes `URLError(.unknown)` with its description. (The app is given
    /// the protocol's error itself: ``TransferError/reporting(_:)``.)
    static func transferError(_ error: any Error) -> TransferError {
        if let urlError = error as? URLError {
            return .urlError(urlError.code, urlError.localizedDescription)
        }
        let nsError = error as NSError
        if nsError.domain == NSURLErrorDomain {
            return .urlError(URLError.Code(rawValue: nsError.code) ?? .unknown, nsError.localizedDescription)
        }
        return .urlError(.unknown, String(describing: error))
    }
}
