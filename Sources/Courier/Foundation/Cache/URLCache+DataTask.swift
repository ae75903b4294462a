import Foundation

/// The data-task variants Apple declares in an extension of `URLCache`. Each uses the task's current request.
///
/// Apple's are `open` (Objective-C methods); these are `public`, because Swift cannot override a method declared
/// in an extension. Override the request-based methods instead, which these call.
extension URLCache {
    /// Stores a cached response for a data task's current request. Does nothing when the task has no request.
    ///
    /// - Parameters:
    ///   - cachedResponse: The response to store.
    ///   - dataTask: The data task whose current request the response answers.
    public func storeCachedResponse(_ cachedResponse: CachedURLResponse, for dataTask: URLSessionDataTask) {
        guard let request = dataTask.currentRequest else { return }
        storeCachedResponse(cachedResponse, for: request)
    }

    /// Passes the cached response for a data task's current request, or `nil`, to a completion handler.
    ///
    /// The handler is called before this method returns, on the calling thread.
    ///
    /// - Parameters:
    ///   - dataTask: The data task.
    ///   - completionHandler: Receives the cached response, or `nil`.
    public func getCachedResponse(
        for dataTask: URLSessionDataTask, completionHandler: @escaping @Sendable (CachedURLResponse?) -> Void
    ) {
        completionHandler(dataTask.currentRequest.flatMap { cachedResponse(for: $0) })
    }

    /// Returns the cached response for a data task's current request, or `nil`.
    ///
    /// - Parameter dataTask: The data task.
    public func cachedResponse(for dataTask: URLSessionDataTask) async -> CachedURLResponse? {
        dataTask.currentRequest.flatMap { cachedResponse(for: $0) }
    }

    /// Removes the cached response for a data task's current request.
    ///
    /// - Parameter dataTask: The data task.
    public func removeCachedResponse(for dataTask: URLSessionDataTask) {
        guard let request = dataTask.currentRequest else { return }
        removeCachedResponse(for: request)
    }
}
