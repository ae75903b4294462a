import Foundation

/// A cached response: the response metadata, its data, optional user information and a storage policy.
///
/// Cached responses are immutable; ``copy(with:)`` returns the receiver. Two cached responses are equal
/// (``isEqual(_:)``) when their responses are equal and their data and storage policies are the same.
open class CachedURLResponse: NSObject, NSCopying, @unchecked Sendable {
    private let storedResponse: URLResponse
    private let storedData: Data
    private let storedUserInfo: [AnyHashable: Any]?
    private let storedStoragePolicy: URLCache.StoragePolicy
    /// What the HTTP cache recorded when it stored the response; `nil` for one the app made.
    let metadata: CacheMetadata?

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
        metadata = nil
        super.init()
    }

    /// A cached response with the HTTP cache's metadata.
    init(
        response: URLResponse, data: Data, userInfo: [AnyHashable: Any]?, storagePolicy: URLCache.StoragePolicy,
        metadata: CacheMetadata?
    ) {
        storedResponse = response
        storedData = data
        storedUserInfo = userInfo
        storedStoragePolicy = storagePolicy
        self.metadata = metadata
        super.init()
    }

    /// Creates a cached response with no user information that may be stored anywhere
    /// (``URLCache/StoragePolicy/allowed``).
    ///
    /// - Parameters:
    ///   - response: The response to cache.
    ///   - data: The response's data.
    public convenience init(response: URLResponse, data: Data) {
        self.init(response: response, data: data, userInfo: nil, storagePolicy: .allowed)
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

    /// Returns the receiver: cached responses are immutable.
    open override func copy() -> Any {
        copy(with: nil)
    }

    /// Whether `object` is a cached response whose response is equal (``URLResponse/isEqual(_:)``) and whose data
    /// and storage policy are the same. User information is not compared: its values need not be equatable.
    ///
    /// - Parameter object: The object to compare with.
    open override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? CachedURLResponse else { return false }
        return other === self
            || (response.isEqual(other.response) && data == other.data && storagePolicy == other.storagePolicy)
    }

    /// A hash of the response, data and storage policy (consistent with ``isEqual(_:)``).
    open override var hash: Int {
        var hasher = Hasher()
        hasher.combine(response.hash)
        hasher.combine(data)
        hasher.combine(storagePolicy)
        return hasher.finalize()
    }
}
