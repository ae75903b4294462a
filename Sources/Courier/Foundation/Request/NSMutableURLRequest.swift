import Foundation

/// A mutable URL load request: ``NSURLRequest`` with setters, as in Apple's Foundation.
///
/// Copies are independent: ``copy(with:)`` returns an immutable ``NSURLRequest`` snapshot and
/// ``NSURLRequest/mutableCopy(with:)`` a new mutable request. Setting ``httpBody`` clears ``httpBodyStream`` and the
/// other way round, as with ``URLRequest``.
open class NSMutableURLRequest: NSURLRequest, @unchecked Sendable {
    /// Creates a mutable request holding `request` (bridging and copies).
    package override init(request: URLRequest) {
        super.init(request: request)
    }

    /// Creates a mutable request for `url` with the given cache policy and timeout.
    ///
    /// - Parameters:
    ///   - url: The URL to load.
    ///   - cachePolicy: How the request interacts with the URL cache.
    ///   - timeoutInterval: The timeout interval in seconds.
    public override init(url: URL, cachePolicy: NSURLRequest.CachePolicy, timeoutInterval: TimeInterval) {
        super.init(url: url, cachePolicy: cachePolicy, timeoutInterval: timeoutInterval)
    }

    /// Creates a mutable request for `url` with the default cache policy and a 60-second timeout.
    ///
    /// - Parameter url: The URL to load.
    public convenience init(url: URL) {
        self.init(url: url, cachePolicy: .useProtocolCachePolicy, timeoutInterval: 60)
    }

    /// Decodes a request archived with ``NSURLRequest/encode(with:)``; `nil` when the archive holds no valid
    /// request.
    ///
    /// - Parameter aDecoder: A keyed decoder.
    public required init?(coder aDecoder: NSCoder) {
        super.init(coder: aDecoder)
    }

    /// Returns an immutable ``NSURLRequest`` with the receiver's current values.
    ///
    /// - Parameter zone: Ignored.
    open override func copy(with zone: NSZone? = nil) -> Any {
        NSURLRequest(request: request)
    }

    private func mutate(_ change: (inout URLRequest) -> Void) {
        storage.withLockedValue(change)
    }

    /// The URL of the request.
    open override var url: URL? {
        get { request.url }
        set { mutate { $0.url = newValue } }
    }
    /// The main document URL, used by the cookie policy `onlyFromMainDocumentDomain`.
    open override var mainDocumentURL: URL? {
        get { request.mainDocumentURL }
        set { mutate { $0.mainDocumentURL = newValue } }
    }
    /// How the request interacts with the URL cache.
    open override var cachePolicy: NSURLRequest.CachePolicy {
        get { request.cachePolicy }
        set { mutate { $0.cachePolicy = newValue } }
    }
    /// The timeout interval in seconds.
    open override var timeoutInterval: TimeInterval {
        get { request.timeoutInterval }
        set { mutate { $0.timeoutInterval = newValue } }
    }
    /// The HTTP method; setting `nil` restores `"GET"`.
    open override var httpMethod: String? {
        get { request.httpMethod }
        set { mutate { $0.httpMethod = newValue } }
    }
    /// All header fields, or `nil` when there are none; setting replaces every field.
    open override var allHTTPHeaderFields: [String: String]? {
        get { request.allHTTPHeaderFields }
        set { mutate { $0.allHTTPHeaderFields = newValue } }
    }
    /// The request body; setting it clears ``httpBodyStream``.
    open override var httpBody: Data? {
        get { request.httpBody }
        set { mutate { $0.httpBody = newValue } }
    }
    /// The stream the body is read from; setting it clears ``httpBody``.
    open override var httpBodyStream: InputStream? {
        get { request.httpBodyStream }
        set { mutate { $0.httpBodyStream = newValue } }
    }
    /// The kind of traffic the request carries (recorded only).
    open override var networkServiceType: NSURLRequest.NetworkServiceType {
        get { request.networkServiceType }
        set { mutate { $0.networkServiceType = newValue } }
    }
    /// Whether the request may use the cellular radio (recorded only).
    open override var allowsCellularAccess: Bool {
        get { request.allowsCellularAccess }
        set { mutate { $0.allowsCellularAccess = newValue } }
    }
    /// Whether the request may use an expensive network interface (recorded only).
    open override var allowsExpensiveNetworkAccess: Bool {
        get { request.allowsExpensiveNetworkAccess }
        set { mutate { $0.allowsExpensiveNetworkAccess = newValue } }
    }
    /// Whether the request may use a network interface in Low Data Mode (recorded only).
    open override var allowsConstrainedNetworkAccess: Bool {
        get { request.allowsConstrainedNetworkAccess }
        set { mutate { $0.allowsConstrainedNetworkAccess = newValue } }
    }
    /// Whether the request assumes the server supports HTTP/3 (recorded only).
    open override var assumesHTTP3Capable: Bool {
        get { request.assumesHTTP3Capable }
        set { mutate { $0.assumesHTTP3Capable = newValue } }
    }
    /// Whether DNS resolution must be validated with DNSSEC (recorded only).
    open override var requiresDNSSECValidation: Bool {
        get { request.requiresDNSSECValidation }
        set { mutate { $0.requiresDNSSECValidation = newValue } }
    }
    /// Whether the request was initiated by the user or by the developer (recorded only).
    open override var attribution: URLRequest.Attribution {
        get { request.attribution }
        set { mutate { $0.attribution = newValue } }
    }
    /// Whether cookies are sent with the request and stored from its response.
    open override var httpShouldHandleCookies: Bool {
        get { request.httpShouldHandleCookies }
        set { mutate { $0.httpShouldHandleCookies = newValue } }
    }
    /// Whether the request may be sent before the previous response arrived (recorded only: Courier never pipelines).
    open override var httpShouldUsePipelining: Bool {
        get { request.httpShouldUsePipelining }
        set { mutate { $0.httpShouldUsePipelining = newValue } }
    }

    /// Sets a header field, replacing any value it had; `nil` removes the field.
    ///
    /// - Parameters:
    ///   - value: The new value, or `nil` to remove the field.
    ///   - field: The header field name, compared case-insensitively.
    open func setValue(_ value: String?, forHTTPHeaderField field: String) {
        mutate { $0.setValue(value, forHTTPHeaderField: field) }
    }

    /// Adds a value to a header field (appended after `", "` when the field already has one).
    ///
    /// - Parameters:
    ///   - value: The value to add.
    ///   - field: The header field name, compared case-insensitively.
    open func addValue(_ value: String, forHTTPHeaderField field: String) {
        mutate { $0.addValue(value, forHTTPHeaderField: field) }
    }
}
