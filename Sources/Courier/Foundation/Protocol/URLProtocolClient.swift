import Foundation

/// The interface a `URLProtocol` subclass uses to report the progress of a load to the URL Loading System.
///
/// Every method is a requirement, as on Apple platforms. Courier does not run custom protocols yet (a later
/// release), so no client is handed to a protocol by a session; the protocol exists so that `URLProtocol`
/// subclasses written for Apple platforms compile.
public protocol URLProtocolClient: NSObjectProtocol, Sendable {
    /// Tells the client that the protocol was redirected to another request.
    ///
    /// - Parameters:
    ///   - protocol: The protocol object.
    ///   - request: The new request.
    ///   - redirectResponse: The response that caused the redirect.
    func urlProtocol(_ protocol: URLProtocol, wasRedirectedTo request: URLRequest, redirectResponse: URLResponse)

    /// Tells the client that a cached response is valid and will be used.
    ///
    /// - Parameters:
    ///   - protocol: The protocol object.
    ///   - cachedResponse: The valid cached response.
    func urlProtocol(_ protocol: URLProtocol, cachedResponseIsValid cachedResponse: CachedURLResponse)

    /// Tells the client that the protocol created a response for the request.
    ///
    /// - Parameters:
    ///   - protocol: The protocol object.
    ///   - response: The response.
    ///   - policy: Whether and where the response may be cached.
    func urlProtocol(
        _ protocol: URLProtocol, didReceive response: URLResponse, cacheStoragePolicy policy: URLCache.StoragePolicy)

    /// Tells the client that the protocol loaded some data.
    ///
    /// - Parameters:
    ///   - protocol: The protocol object.
    ///   - data: The data loaded since the previous call.
    func urlProtocol(_ protocol: URLProtocol, didLoad data: Data)

    /// Tells the client that the protocol finished loading.
    ///
    /// - Parameter protocol: The protocol object.
    func urlProtocolDidFinishLoading(_ protocol: URLProtocol)

    /// Tells the client that the load failed.
    ///
    /// - Parameters:
    ///   - protocol: The protocol object.
    ///   - error: The error.
    func urlProtocol(_ protocol: URLProtocol, didFailWithError error: any Error)

    /// Tells the client that the protocol received an authentication challenge.
    ///
    /// - Parameters:
    ///   - protocol: The protocol object.
    ///   - challenge: The challenge.
    func urlProtocol(_ protocol: URLProtocol, didReceive challenge: URLAuthenticationChallenge)

    /// Tells the client that an authentication challenge was cancelled.
    ///
    /// - Parameters:
    ///   - protocol: The protocol object.
    ///   - challenge: The cancelled challenge.
    func urlProtocol(_ protocol: URLProtocol, didCancel challenge: URLAuthenticationChallenge)
}
