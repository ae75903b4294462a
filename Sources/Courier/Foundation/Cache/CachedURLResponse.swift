import Foundation

/// A cached response: the response metadata, its data, optional user information and a storage policy.
///
/// Cached responses are immutable; ``copy(with:)`` returns the receiver.
open class CachedURLResponse: NSObject, NSCopying, @unchecked Sendable {
    private let storedResponse: URLResponse
    private let storedData: Data
    private let storedUserInfo: [AnyHashable: Any]?
    private let storedStoragePolicy: URLCache.StoragePolicy

    /// Creates a cached response.
    ///
    /// - Parameters:
    ///   - response: The response to cache.
    ///   - data: The response's data.
    ///   - userInfo: Optional user information.
    ///   - storagePolicy: Where the response may be stored. Defaults to ``URLCache/StoragePolicy/allowed``.
    public init(
        response: URLResponse, data: Data, userInfo: [AnyHashable: Any]? = nil,
        storagePolicy: URLCache.StoragePolicy = .allowed
    ) {
        storedResponse = response
        storedData = data
        storedUserInfo = userInfo
        storedStoragePolicy = storagePolicy
        super.init()
    }

    /// The cached response metadata.
    open var response: URLResponse { storedResponse }

    /// The cached response's data.
    open var data: Data { storedData }

    /// The user information of the cached response, or `nil`.
    open var userInfo: [AnyHashable: Any]? { storedUserInfo }

    /// Where the cached response may be stored.
    open var storagePolicy: URLCache.StoragePolicy { storedStoragePolicy }

    /// Returns the receiver: cached responses are immutable.
    ///
    /// - Parameter zone: Ignored.
    open func copy(with zone: NSZone? = nil) -> Any {
        self
    }
}
