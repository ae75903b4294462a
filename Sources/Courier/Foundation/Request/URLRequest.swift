import CourierHTTP
import Foundation

/// A URL load request that is independent of protocol or URL scheme.
///
/// `URLRequest` is a value type: copies are independent. It mirrors Apple's `URLRequest` from the URL Loading
/// System. HTTP header field names are case-insensitive: `value(forHTTPHeaderField: "content-type")` finds a field
/// set as `Content-Type`, and two requests whose fields differ only in name casing are equal. Properties attached
/// with `URLProtocol.setProperty(_:forKey:in:)` travel with copies of the request but are ignored by `==` and
/// hashing.
public struct URLRequest: Hashable, Equatable, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// Constants that specify how a request interacts with the URL cache.
    public typealias CachePolicy = NSURLRequest.CachePolicy

    /// Constants that describe the kind of traffic a request carries.
    public typealias NetworkServiceType = NSURLRequest.NetworkServiceType

    /// The URL of the request.
    public var url: URL? {
        get { storage.fields.url }
        set { uniqueFields.url = newValue }
    }

    /// The request's cache policy.
    public var cachePolicy: URLRequest.CachePolicy {
        get { storage.fields.cachePolicy }
        set { uniqueFields.cachePolicy = newValue }
    }

    /// The request's timeout interval, in seconds: how long a task waits for additional data before timing out.
    public var timeoutInterval: TimeInterval {
        get { storage.fields.timeoutInterval }
        set { uniqueFields.timeoutInterval = newValue }
    }

    /// The main document URL associated with the request, used by the cookie policy
    /// `HTTPCookie.AcceptPolicy.onlyFromMainDocumentDomain`.
    public var mainDocumentURL: URL? {
        get { storage.fields.mainDocumentURL }
        set { uniqueFields.mainDocumentURL = newValue }
    }

    /// The network service type of the request. Recorded for API compatibility; it does not change how Courier
    /// sends the request.
    public var networkServiceType: URLRequest.NetworkServiceType {
        get { storage.fields.networkServiceType }
        set { uniqueFields.networkServiceType = newValue }
    }

    /// Whether the request may use the cellular radio. Linux has no such restriction; the value is recorded only.
    public var allowsCellularAccess: Bool {
        get { storage.fields.allowsCellularAccess }
        set { uniqueFields.allowsCellularAccess = newValue }
    }

    /// Whether the request may use a network interface the system considers expensive. Recorded only.
    public var allowsExpensiveNetworkAccess: Bool {
        get { storage.fields.allowsExpensiveNetworkAccess }
        set { uniqueFields.allowsExpensiveNetworkAccess = newValue }
    }

    /// Whether the request may use a network interface in Low Data Mode. Recorded only.
    public var allowsConstrainedNetworkAccess: Bool {
        get { storage.fields.allowsConstrainedNetworkAccess }
        set { uniqueFields.allowsConstrainedNetworkAccess = newValue }
    }

    /// Whether the request assumes the server supports HTTP/3. Recorded only.
    public var assumesHTTP3Capable: Bool {
        get { storage.fields.assumesHTTP3Capable }
        set { uniqueFields.assumesHTTP3Capable = newValue }
    }

    /// Whether DNS resolution for the request must be validated with DNSSEC. Recorded only.
    public var requiresDNSSECValidation: Bool {
        get { storage.fields.requiresDNSSECValidation }
        set { uniqueFields.requiresDNSSECValidation = newValue }
    }

    /// Whether the request was initiated by the user or by the developer. Recorded only: it feeds Apple's App Privacy
    /// Report, which Linux does not have.
    public var attribution: URLRequest.Attribution {
        get { storage.fields.attribution }
        set { uniqueFields.attribution = newValue }
    }

    /// Whether cookies from the session's cookie storage are sent with this request and cookies it receives stored.
    public var httpShouldHandleCookies: Bool {
        get { storage.fields.httpShouldHandleCookies }
        set { uniqueFields.httpShouldHandleCookies = newValue }
    }

    /// Whether the request may be sent before the previous response on the connection has been received. Recorded
    /// only: Courier never pipelines (Apple documents the value as a hint that does not guarantee pipelining).
    public var httpShouldUsePipelining: Bool {
        get { storage.fields.httpShouldUsePipelining }
        set { uniqueFields.httpShouldUsePipelining = newValue }
    }

    private var method: String {
        get { storage.fields.method }
        set { uniqueFields.method = newValue }
    }

    private var body: Body {
        get { storage.fields.body }
        set { uniqueFields.body = newValue }
    }

    /// The request's header fields, in insertion order, with case-insensitive names.
    package var headerFields: HeaderFieldDictionary {
        get { storage.fields.headerFields }
        // In place: a stage that adds a field to a request it owns alone copies nothing.
        _modify { yield &uniqueFields.headerFields }
    }

    private var protocolPropertyStorage: URLProtocolPropertyStorage {
        get { storage.fields.protocolPropertyStorage }
        _modify { yield &uniqueFields.protocolPropertyStorage }
    }

    /// The request's properties, shared by copies until one of them changes (as Darwin's `URLRequest` shares its
    /// `NSURLRequest`): a request passes through every request stage and is kept by the task, its engine and the
    /// transport request, and copying a dozen fields each time cost about 150 reference-count operations per request.
    private var storage: Storage

    /// The fields, copied first when another request shares them.
    private var uniqueFields: Fields {
        get { storage.fields }
        _modify {
            if !isKnownUniquelyReferenced(&storage) { storage = Storage(storage.fields) }
            yield &storage.fields
        }
    }

    /// The properties `URLProtocol.setProperty(_:forKey:in:)` attached to the request, by key.
    ///
    /// They travel with every copy of the request and are ignored by `==` and `hash(into:)` (see
    /// ``URLProtocolPropertyStorage``).
    package var protocolProperties: [String: Any] {
        get { protocolPropertyStorage.values }
        set { protocolPropertyStorage.values = newValue }
    }

    /// Creates a request for the given URL.
    ///
    /// A relative URL is stored as its absolute URL, as FoundationNetworking does.
    ///
    /// - Parameters:
    ///   - url: The URL to load.
    ///   - cachePolicy: The cache policy. Defaults to ``URLRequest/CachePolicy/useProtocolCachePolicy``.
    ///   - timeoutInterval: The timeout interval in seconds. Defaults to 60.
    public init(
        url: URL, cachePolicy: URLRequest.CachePolicy = .useProtocolCachePolicy, timeoutInterval: TimeInterval = 60.0
    ) {
        storage = Storage(Fields(url: url.absoluteURL, cachePolicy: cachePolicy, timeoutInterval: timeoutInterval))
    }

    /// The HTTP request method. Defaults to `"GET"`; setting `nil` restores `"GET"`. `GET`, `HEAD`, `POST`, `PUT`,
    /// `DELETE` and `CONNECT` are stored in upper case whatever case they are set in (`"get"` becomes `"GET"`), as
    /// FoundationNetworking does; other methods are stored as given.
    public var httpMethod: String? {
        get { method }
        set { method = newValue.map(MethodRules.normalized) ?? "GET" }
    }

    /// All of the request's HTTP header fields, or `nil` when there are none.
    ///
    /// Setting a dictionary replaces every field; setting `nil` removes them all.
    public var allHTTPHeaderFields: [String: String]? {
        get { headerFields.isEmpty ? nil : headerFields.dictionary }
        set { headerFields = HeaderFieldDictionary(newValue ?? [:]) }
    }

    /// Returns the value of a header field, whose name is compared case-insensitively.
    ///
    /// - Parameter field: The header field name.
    /// - Returns: The value, or `nil` if the request has no such field.
    public func value(forHTTPHeaderField field: String) -> String? {
        headerFields[field]
    }

    /// Sets a header field, replacing any value it had. Passing `nil` removes the field.
    ///
    /// A value with a NUL, or with a CR or LF other than in a line fold (CR LF followed by a space or a tab), is
    /// ignored and the field keeps its value, as in FoundationNetworking. A line-folded value is stored as given; its
    /// CR LF are removed when the request is sent.
    ///
    /// - Parameters:
    ///   - value: The new value, or `nil` to remove the field.
    ///   - field: The header field name, compared case-insensitively.
    public mutating func setValue(_ value: String?, forHTTPHeaderField field: String) {
        if let value, !FieldValue.isValidRequestValue(value) { return }
        headerFields[field] = value
    }

    /// Adds a value to a header field.
    ///
    /// When the field already has a value, the new value is appended after a comma (`","`), the field delimiter of
    /// HTTP lists, as on Darwin and in FoundationNetworking; otherwise the field is created. A value that
    /// ``setValue(_:forHTTPHeaderField:)`` would ignore is ignored.
    ///
    /// - Parameters:
    ///   - value: The value to add.
    ///   - field: The header field name, compared case-insensitively.
    public mutating func addValue(_ value: String, forHTTPHeaderField field: String) {
        guard FieldValue.isValidRequestValue(value) else { return }
        if let existing = headerFields[field] {
            headerFields[field] = existing + "," + value
        } else {
            headerFields[field] = value
        }
    }

    /// The request body. Setting it clears ``httpBodyStream``.
    public var httpBody: Data? {
        get {
            switch body {
            case .data(let data), .dataAlsoAsStream(let data, _): return data
            case .none, .stream: return nil
            }
        }
        set { body = newValue.map(Body.data) ?? .none }
    }

    /// A stream from which the request body is read. Setting it clears ``httpBody``.
    ///
    /// Two requests are equal only if they hold the same stream object.
    public var httpBodyStream: InputStream? {
        get {
            switch body {
            case .stream(let box), .dataAlsoAsStream(_, let box): return box.stream
            case .none, .data: return nil
            }
        }
        set { body = newValue.map { Body.stream(InputStreamBox($0)) } ?? .none }
    }

    /// This request with its `httpBody`, if it has one, also readable from a new `httpBodyStream`, for a custom
    /// `URLProtocol`: Darwin hands a protocol the body as a stream only (stubs written for Darwin read
    /// `httpBodyStream`), FoundationNetworking as data (stubs written for it read `httpBody`); the protocol's request
    /// answers both. Setting either property replaces both, as ever.
    func withBodyAlsoAsStream() -> URLRequest {
        guard case .data(let data) = body else { return self }
        var copy = self
        copy.body = .dataAlsoAsStream(data, InputStreamBox(InputStream(data: data)))
        return copy
    }

    /// The URL of the request, or `"url: nil"`.
    public var description: String {
        url?.description ?? "url: nil"
    }

    /// The URL of the request, or `"url: nil"`.
    public var debugDescription: String {
        description
    }

    /// Whether two requests are equal: every property is compared (header field names case-insensitively, a body
    /// stream by identity); properties attached with `URLProtocol.setProperty(_:forKey:in:)` are ignored.
    public static func == (lhs: URLRequest, rhs: URLRequest) -> Bool {
        if lhs.storage === rhs.storage { return true }
        return lhs.url == rhs.url && lhs.cachePolicy == rhs.cachePolicy && lhs.timeoutInterval == rhs.timeoutInterval
            && lhs.mainDocumentURL == rhs.mainDocumentURL && lhs.networkServiceType == rhs.networkServiceType
            && lhs.allowsCellularAccess == rhs.allowsCellularAccess
            && lhs.allowsExpensiveNetworkAccess == rhs.allowsExpensiveNetworkAccess
            && lhs.allowsConstrainedNetworkAccess == rhs.allowsConstrainedNetworkAccess
            && lhs.assumesHTTP3Capable == rhs.assumesHTTP3Capable
            && lhs.requiresDNSSECValidation == rhs.requiresDNSSECValidation && lhs.attribution == rhs.attribution
            && lhs.httpShouldHandleCookies == rhs.httpShouldHandleCookies
            && lhs.httpShouldUsePipelining == rhs.httpShouldUsePipelining && lhs.method == rhs.method
            && lhs.body == rhs.body && lhs.headerFields == rhs.headerFields
    }

    /// Hashes the properties ``==`` compares.
    ///
    /// - Parameter hasher: The hasher to feed.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(url)
        hasher.combine(cachePolicy)
        hasher.combine(timeoutInterval)
        hasher.combine(mainDocumentURL)
        hasher.combine(networkServiceType)
        hasher.combine(allowsCellularAccess)
        hasher.combine(allowsExpensiveNetworkAccess)
        hasher.combine(allowsConstrainedNetworkAccess)
        hasher.combine(assumesHTTP3Capable)
        hasher.combine(requiresDNSSECValidation)
        hasher.combine(attribution)
        hasher.combine(httpShouldHandleCookies)
        hasher.combine(httpShouldUsePipelining)
        hasher.combine(method)
        hasher.combine(body)
        hasher.combine(headerFields)
    }

    /// The body of a request: none, bytes, or a stream.
    private enum Body: Hashable, Sendable {
        case none
        case data(Data)
        case stream(InputStreamBox)
        /// Bytes that are also offered as a stream (``withBodyAlsoAsStream()``).
        case dataAlsoAsStream(Data, InputStreamBox)
    }

    /// Every property of a request, in one value.
    private struct Fields: Sendable {
        var url: URL?
        var cachePolicy: URLRequest.CachePolicy
        var timeoutInterval: TimeInterval
        var mainDocumentURL: URL?
        var networkServiceType: URLRequest.NetworkServiceType = .default
        var allowsCellularAccess = true
        var allowsExpensiveNetworkAccess = true
        var allowsConstrainedNetworkAccess = true
        var assumesHTTP3Capable = false
        var requiresDNSSECValidation = false
        var attribution: URLRequest.Attribution = .developer
        var httpShouldHandleCookies = true
        var httpShouldUsePipelining = false
        var method = "GET"
        var body: Body = .none
        var headerFields = HeaderFieldDictionary()
        var protocolPropertyStorage = URLProtocolPropertyStorage()

        init(url: URL?, cachePolicy: URLRequest.CachePolicy, timeoutInterval: TimeInterval) {
            self.url = url
            self.cachePolicy = cachePolicy
            self.timeoutInterval = timeoutInterval
        }
    }

    /// The box copies share. It is changed only through ``uniqueFields``, which first gives a request that shares it
    /// a box of its own; so no two threads ever change one, which is why it may be sent.
    private final class Storage: @unchecked Sendable {
        var fields: Fields

        init(_ fields: Fields) {
            self.fields = fields
        }
    }
}
