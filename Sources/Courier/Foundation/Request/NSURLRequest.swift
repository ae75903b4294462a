import Foundation
import NIOConcurrencyHelpers

/// An immutable URL load request: the reference counterpart of ``URLRequest``, as in Apple's Foundation.
///
/// An `NSURLRequest` holds a ``URLRequest`` value and exposes its properties read-only; ``NSMutableURLRequest``
/// adds setters. `URLRequest` bridges to it (`ReferenceType`), ``copy(with:)`` and ``mutableCopy(with:)`` make
/// independent copies, and two requests are equal (``isEqual(_:)``) when their `URLRequest` values are.
open class NSURLRequest: NSObject, NSSecureCoding, NSCopying, NSMutableCopying, @unchecked Sendable {
    /// The request's state. Guarded by its lock: a mutable request may be changed from any thread.
    let storage: NIOLockedValueBox<URLRequest>

    /// A copy of the request as a value.
    package var request: URLRequest { storage.withLockedValue { $0 } }

    /// Creates a request holding `request` (bridging and copies).
    package init(request: URLRequest) {
        self.storage = NIOLockedValueBox(request)
        super.init()
    }

    /// Creates a request for `url` with the given cache policy and timeout.
    ///
    /// - Parameters:
    ///   - url: The URL to load.
    ///   - cachePolicy: How the request interacts with the URL cache.
    ///   - timeoutInterval: The timeout interval in seconds.
    public init(url: URL, cachePolicy: NSURLRequest.CachePolicy, timeoutInterval: TimeInterval) {
        self.storage = NIOLockedValueBox(
            URLRequest(url: url, cachePolicy: cachePolicy, timeoutInterval: timeoutInterval))
        super.init()
    }

    /// Creates a request for `url` with the default cache policy and a 60-second timeout.
    ///
    /// - Parameter url: The URL to load.
    public convenience init(url: URL) {
        self.init(url: url, cachePolicy: .useProtocolCachePolicy, timeoutInterval: 60)
    }

    /// Decodes a request archived with ``encode(with:)``; `nil` when the archive holds no valid request.
    ///
    /// - Parameter aDecoder: A keyed decoder.
    public required init?(coder aDecoder: NSCoder) {
        guard let request = NSURLRequest.decodeRequest(from: aDecoder) else { return nil }
        self.storage = NIOLockedValueBox(request)
        super.init()
    }

    /// `true`: requests decode with `NSKeyedUnarchiver`'s secure coding.
    open class var supportsSecureCoding: Bool { true }

    /// Archives the request with a keyed coder.
    ///
    /// Every property is archived except ``httpBodyStream`` (a stream cannot be archived; Darwin drops it too)
    /// and the properties `URLProtocol.setProperty(_:forKey:in:)` attached, whose values may be of any type. Header
    /// fields keep their order and spelling. A coder that does not allow keyed coding archives nothing, and
    /// ``init(coder:)`` then fails.
    ///
    /// - Parameter aCoder: A keyed coder, such as `NSKeyedArchiver`.
    open func encode(with aCoder: NSCoder) {
        NSURLRequest.encodeRequest(request, with: aCoder)
    }

    // MARK: - Copying

    /// Returns an immutable copy: the receiver itself when it is an immutable `NSURLRequest`, otherwise a new
    /// `NSURLRequest` with the same values.
    open override func copy() -> Any {
        copy(with: nil)
    }

    /// Returns an immutable copy: the receiver itself when it is an immutable `NSURLRequest`, otherwise a new
    /// `NSURLRequest` with the same values.
    ///
    /// - Parameter zone: Ignored.
    open func copy(with zone: NSZone? = nil) -> Any {
        if type(of: self) === NSURLRequest.self { return self }
        return NSURLRequest(request: request)
    }

    /// Returns a new ``NSMutableURLRequest`` with the same values; changing it leaves the receiver unchanged.
    open override func mutableCopy() -> Any {
        mutableCopy(with: nil)
    }

    /// Returns a new ``NSMutableURLRequest`` with the same values; changing it leaves the receiver unchanged.
    ///
    /// - Parameter zone: Ignored.
    open func mutableCopy(with zone: NSZone? = nil) -> Any {
        NSMutableURLRequest(request: request)
    }

    // MARK: - Equality

    /// Whether `object` is an `NSURLRequest` whose ``URLRequest`` value equals the receiver's.
    ///
    /// - Parameter object: The object to compare with.
    /// - Returns: `true` when both hold equal requests.
    open override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? NSURLRequest else { return false }
        return other === self || other.request == request
    }

    /// The hash of the held ``URLRequest`` value (equal requests have equal hashes).
    open override var hash: Int {
        request.hashValue
    }

    // MARK: - Properties

    /// The URL of the request.
    open var url: URL? { request.url }
    /// The main document URL, used by the cookie policy `onlyFromMainDocumentDomain`.
    open var mainDocumentURL: URL? { request.mainDocumentURL }
    /// How the request interacts with the URL cache.
    open var cachePolicy: NSURLRequest.CachePolicy { request.cachePolicy }
    /// The timeout interval in seconds.
    open var timeoutInterval: TimeInterval { request.timeoutInterval }
    /// The HTTP method (`"GET"` unless set otherwise).
    open var httpMethod: String? { request.httpMethod }
    /// All header fields, or `nil` when there are none.
    open var allHTTPHeaderFields: [String: String]? { request.allHTTPHeaderFields }
    /// The request body, or `nil`.
    open var httpBody: Data? { request.httpBody }
    /// The stream the body is read from, or `nil`.
    open var httpBodyStream: InputStream? { request.httpBodyStream }
    /// The kind of traffic the request carries (recorded only).
    open var networkServiceType: NSURLRequest.NetworkServiceType { request.networkServiceType }
    /// Whether the request may use the cellular radio (recorded only).
    open var allowsCellularAccess: Bool { request.allowsCellularAccess }
    /// Whether the request may use an expensive network interface (recorded only).
    open var allowsExpensiveNetworkAccess: Bool { request.allowsExpensiveNetworkAccess }
    /// Whether the request may use a network interface in Low Data Mode (recorded only).
    open var allowsConstrainedNetworkAccess: Bool { request.allowsConstrainedNetworkAccess }
    /// Whether the request assumes the server supports HTTP/3 (recorded only).
    open var assumesHTTP3Capable: Bool { request.assumesHTTP3Capable }
    /// Whether DNS resolution must be validated with DNSSEC (recorded only).
    open var requiresDNSSECValidation: Bool { request.requiresDNSSECValidation }
    /// Whether the request was initiated by the user or by the developer (recorded only).
    open var attribution: URLRequest.Attribution { request.attribution }
    /// Whether cookies are sent with the request and stored from its response.
    open var httpShouldHandleCookies: Bool { request.httpShouldHandleCookies }
    /// Whether the request may be sent before the previous response arrived (recorded only: Courier never pipelines).
    open var httpShouldUsePipelining: Bool { request.httpShouldUsePipelining }

    /// Returns the value of a header field, whose name is compared case-insensitively.
    ///
    /// - Parameter field: The header field name.
    /// - Returns: The value, or `nil` if the request has no such field.
    open func value(forHTTPHeaderField field: String) -> String? {
        request.value(forHTTPHeaderField: field)
    }

    /// The object's description followed by the URL, as in FoundationNetworking:
    /// `<Courier.NSURLRequest: 0x…> { URL: https://example.com/ }`.
    open override var description: String {
        super.description + " { URL: \(url?.description ?? "(null)") }"
    }
}
