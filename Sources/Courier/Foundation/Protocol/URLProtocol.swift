import Foundation
import NIOConcurrencyHelpers
import Synchronization

/// An abstract class that handles the loading of protocol-specific URL data.
///
/// Subclass it, override ``canInit(with:)-(URLRequest)``, ``canonicalRequest(for:)``, ``startLoading()`` and
/// ``stopLoading()``, and either register the subclass with ``registerClass(_:)`` or list it in a session
/// configuration's `protocolClasses`.
///
/// A session looks its protocols up as Apple platforms do — the configuration's `protocolClasses` in order, then
/// the registered classes, most recently registered first — and the first class that claims a request loads it: an
/// instance is created on a thread of its own with a running run loop, ``startLoading()`` is called there, and what
/// the protocol reports to its ``client`` becomes the task's response, data, redirects and completion.
/// ``stopLoading()`` is called on that thread when the task is cancelled or done.
///
/// Apple's `setProperty(_:forKey:in:)` and `removeProperty(forKey:in:)` take an `NSMutableURLRequest`, which
/// Courier does not have; here they take an `inout URLRequest`.
open class URLProtocol: NSObject, @unchecked Sendable {
    private let storedRequest: URLRequest
    private let storedCachedResponse: CachedURLResponse?
    private let storedClient: (any URLProtocolClient)?
    /// Set by ``init(task:cachedResponse:client:)`` after the designated initializer (so that subclasses, which
    /// inherit the designated initializer, also inherit that convenience initializer); never changed afterwards.
    private var storedTask: URLSessionTask?

    /// Creates a protocol object for a request.
    ///
    /// - Parameters:
    ///   - request: The request to load.
    ///   - cachedResponse: A cached response for the request, or `nil`.
    ///   - client: The object the protocol reports the load's progress to.
    public required init(request: URLRequest, cachedResponse: CachedURLResponse?, client: (any URLProtocolClient)?) {
        storedRequest = request
        storedCachedResponse = cachedResponse
        storedClient = client
        super.init()
    }

    /// Creates a protocol object for a task; its ``request`` is the task's current request.
    ///
    /// - Parameters:
    ///   - task: The task to load.
    ///   - cachedResponse: A cached response for the task's request, or `nil`.
    ///   - client: The object the protocol reports the load's progress to.
    public convenience init(
        task: URLSessionTask, cachedResponse: CachedURLResponse?, client: (any URLProtocolClient)?
    ) {
        self.init(
            request: task.currentRequest ?? task.originalRequest ?? Self.requestWithoutURL(),
            cachedResponse: cachedResponse,
            client: client
        )
        // Set once, before the object is handed out.
        storedTask = task
    }

    /// Makes `task` the protocol's ``task``, as ``init(task:cachedResponse:client:)`` would have (the session
    /// creates protocols through the required initializer, which subclasses may override).
    func attach(_ task: URLSessionTask) {
        storedTask = task
    }

    /// The object the protocol reports the load's progress to.
    open var client: (any URLProtocolClient)? { storedClient }

    /// The request the protocol loads.
    open var request: URLRequest { storedRequest }

    /// The cached response the protocol was created with, or `nil`.
    open var cachedResponse: CachedURLResponse? { storedCachedResponse }

    /// The task the protocol loads, when it was created with ``init(task:cachedResponse:client:)``.
    open var task: URLSessionTask? { storedTask }

    // MARK: - Subclass hooks

    /// Whether the protocol class can handle a request. The base class returns `false`.
    ///
    /// - Parameter request: The request.
    open class func canInit(with request: URLRequest) -> Bool {
        false
    }

    /// Whether the protocol class can handle a task. The base class asks ``canInit(with:)-(URLRequest)`` about the
    /// task's current request, and returns `false` when the task has none.
    ///
    /// - Parameter task: The task.
    open class func canInit(with task: URLSessionTask) -> Bool {
        guard let request = task.currentRequest else { return false }
        return canInit(with: request)
    }

    /// Returns the canonical form of a request. The base class returns the request unchanged.
    ///
    /// - Parameter request: The request.
    open class func canonicalRequest(for request: URLRequest) -> URLRequest {
        request
    }

    /// Whether two requests are equivalent for caching. The base class compares their canonical forms.
    ///
    /// - Parameters:
    ///   - a: A request.
    ///   - b: Another request.
    open class func requestIsCacheEquivalent(_ a: URLRequest, to b: URLRequest) -> Bool {
        canonicalRequest(for: a) == canonicalRequest(for: b)
    }

    /// Starts loading the request. Subclasses override it.
    ///
    /// Darwin's base class raises an exception; Courier's fails the load with `URLError(.unsupportedURL)` naming
    /// the class, so a protocol that claims requests but never loads them ends its tasks instead of hanging them.
    open func startLoading() {
        var userInfo: [String: Any] = [
            NSLocalizedDescriptionKey:
                "\(type(of: self)) claims the request but does not override URLProtocol.startLoading()"
        ]
        userInfo[NSURLErrorFailingURLErrorKey] = request.url
        client?.urlProtocol(self, didFailWithError: URLError(.unsupportedURL, userInfo: userInfo))
    }

    /// Stops loading the request. Subclasses override it; the base class does nothing.
    open func stopLoading() {}

    // MARK: - Request properties

    /// Returns the property a protocol attached to a request, or `nil`.
    ///
    /// - Parameters:
    ///   - key: The property's key.
    ///   - request: The request.
    open class func property(forKey key: String, in request: URLRequest) -> Any? {
        request.protocolProperties[key]
    }

    /// Attaches a property to a request, replacing any value under the same key.
    ///
    /// Apple's method takes an `NSMutableURLRequest`; Courier's takes the request `inout`. Properties are ignored
    /// when requests are compared.
    ///
    /// - Parameters:
    ///   - value: The value; a property-list value (string, number, data, date, or an array or dictionary of
    ///     them) is expected.
    ///   - key: The property's key.
    ///   - request: The request to change.
    open class func setProperty(_ value: Any, forKey key: String, in request: inout URLRequest) {
        request.protocolProperties[key] = value
    }

    /// Removes a property from a request.
    ///
    /// Apple's method takes an `NSMutableURLRequest`; Courier's takes the request `inout`.
    ///
    /// - Parameters:
    ///   - key: The property's key.
    ///   - request: The request to change.
    open class func removeProperty(forKey key: String, in request: inout URLRequest) {
        request.protocolProperties[key] = nil
    }

    /// Attaches a property to a mutable request, replacing any value under the same key — Darwin's form (the usual
    /// "handled" marker of a protocol that loads through another session:
    /// `URLProtocol.setProperty(true, forKey: "Handled", in: mutableRequest)`).
    ///
    /// - Parameters:
    ///   - value: The value.
    ///   - key: The property's key.
    ///   - request: The request to change.
    open class func setProperty(_ value: Any, forKey key: String, in request: NSMutableURLRequest) {
        request.storage.withLockedValue { $0.protocolProperties[key] = value }
    }

    /// Removes a property from a mutable request — Darwin's form.
    ///
    /// - Parameters:
    ///   - key: The property's key.
    ///   - request: The request to change.
    open class func removeProperty(forKey key: String, in request: NSMutableURLRequest) {
        request.storage.withLockedValue { $0.protocolProperties[key] = nil }
    }

    // MARK: - Registration

    /// Registers a protocol class, which is then consulted before the classes registered earlier.
    ///
    /// Registering a class that is already registered moves it to the front.
    ///
    /// - Parameter protocolClass: The class; it must be `URLProtocol` or a subclass.
    /// - Returns: `true` when the class was registered, `false` when it is not a `URLProtocol` subclass.
    open class func registerClass(_ protocolClass: AnyClass) -> Bool {
        guard let protocolType = protocolClass as? URLProtocol.Type else { return false }
        let identifier = ObjectIdentifier(protocolType)
        registeredProtocolClasses.withLock { classes in
            classes.removeAll { ObjectIdentifier($0) == identifier }
            classes.insert(protocolType, at: 0)
        }
        return true
    }

    /// Unregisters a protocol class. Unregistering a class that is not registered does nothing.
    ///
    /// - Parameter protocolClass: The class to unregister.
    open class func unregisterClass(_ protocolClass: AnyClass) {
        let identifier = ObjectIdentifier(protocolClass)
        registeredProtocolClasses.withLock { classes in
            classes.removeAll { ObjectIdentifier($0) == identifier }
        }
    }

    /// A snapshot of the registered classes in the order they are consulted: most recently registered first.
    package static var registeredClasses: [URLProtocol.Type] {
        registeredProtocolClasses.withLock { $0 }
    }

    /// A request to stand in for a task that has none (never the case for the tasks Courier creates).
    private static func requestWithoutURL() -> URLRequest {
        var request = URLRequest(url: URL(fileURLWithPath: "/"))
        request.url = nil
        return request
    }
}

/// The classes registered with ``URLProtocol/registerClass(_:)``, most recently registered first.
private let registeredProtocolClasses = Mutex<[URLProtocol.Type]>([])
