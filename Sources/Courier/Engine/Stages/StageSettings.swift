import CourierHTTP
import Foundation

/// What the engine and its stages read from the session's configuration for every request, read once when the session
/// is created.
///
/// The session keeps its own copy of the configuration and never changes it, so nothing here can go stale; reading
/// it once saves every request the configuration's locks, the `AnyClass` casts of `protocolClasses` and the
/// conversion of `httpAdditionalHeaders`. A class: every attempt's ``StageContext`` refers to the session's one
/// instead of copying its fields.
final class StageSettings: Sendable {
    /// `protocolClasses` that are `URLProtocol` subclasses, in order.
    let protocolClasses: [URLProtocol.Type]
    /// Whether the classes registered with `URLProtocol.registerClass(_:)` are consulted too: only by the shared
    /// session, as on Darwin, where a session made with a configuration consults its `protocolClasses` alone (test
    /// stubs that register themselves reach such sessions by adding their class to the configuration).
    let consultsRegisteredProtocols: Bool
    /// `httpAdditionalHeaders` as name–value pairs (entries whose key is not a string are dropped).
    let additionalHeaders: [(String, String)]
    let shouldSetCookies: Bool
    let cookieStorage: HTTPCookieStorage?
    /// `requestCachePolicy`: the policy of requests that ask for `.useProtocolCachePolicy`.
    let cachePolicy: URLRequest.CachePolicy
    /// `urlCache`: where responses are looked up and stored.
    let urlCache: URLCache?
    /// Which proxy each URL goes through: `connectionProxyDictionary`, or, when the configuration has none, the
    /// environment (`http_proxy`, `https_proxy`, `all_proxy`, `no_proxy`), read when the session is created.
    let proxyRules: ProxyRules
    /// Whether `proxyRules` names any proxy, decided once: most sessions have none, and every request asks.
    let routesThroughProxies: Bool
    /// `timeoutIntervalForRequest` and `timeoutIntervalForResource`.
    let requestTimeout: TimeInterval
    let resourceTimeout: TimeInterval
    /// `courierMaximumDecompressionRatio`.
    let maximumDecompressionRatio: Int?
    let waitsForConnectivity: Bool

    init(_ configuration: URLSessionConfiguration, consultsRegisteredProtocols: Bool = false) {
        self.consultsRegisteredProtocols = consultsRegisteredProtocols
        requestTimeout = configuration.timeoutIntervalForRequest
        resourceTimeout = configuration.timeoutIntervalForResource
        maximumDecompressionRatio = configuration.courierMaximumDecompressionRatio
        waitsForConnectivity = configuration.waitsForConnectivity
        protocolClasses = (configuration.protocolClasses ?? []).compactMap { $0 as? URLProtocol.Type }
        additionalHeaders = configuration.additionalHeaderPairs
        shouldSetCookies = configuration.httpShouldSetCookies
        cookieStorage = configuration.httpCookieStorage
        cachePolicy = configuration.requestCachePolicy
        urlCache = configuration.urlCache
        if let dictionary = configuration.connectionProxyDictionary {
            var named: [String: Any] = [:]
            for (key, value) in dictionary {
                if let name = key.base as? String { named[name] = value }
            }
            proxyRules = ProxyRules(dictionary: named)
        } else if let variables = configuration.proxyEnvironment {
            proxyRules = ProxyRules(environment: variables)
        } else {
            // Only the proxy variables: copying the whole environment into a dictionary cost every new session more
            // than the rest of its set-up.
            var variables: [String: String] = [:]
            for name in ProxyRules.environmentVariableNames {
                if let value = getenv(name) { variables[name] = String(cString: value) }
            }
            proxyRules = ProxyRules(environment: variables)
        }
        routesThroughProxies = !proxyRules.isEmpty
    }

    /// `request` with the session's ``additionalHeaders`` added where it has no field of their name (reserved names
    /// never), after its own fields; `nil` when that adds nothing, so that the common request is not copied.
    ///
    /// Darwin applies them when it makes a task: `currentRequest` carries them from the start (`originalRequest`,
    /// the app's request, does not), and so does the request a custom `URLProtocol` is given.
    ///
    /// - Parameters:
    ///   - request: The request to complete.
    ///   - includingCredentials: Whether `Authorization` and `Cookie` may be added: not on a redirect's request,
    ///     which carries them only when the redirect stayed on the task's origin (a session's bearer token must not
    ///     follow a redirect to another host).
    func addingAdditionalHeaders(to request: URLRequest, includingCredentials: Bool = true) -> URLRequest? {
        guard !additionalHeaders.isEmpty else { return nil }
        let merged = AdditionalHeaderMerge.merge(
            additional: additionalHeaders, into: request.headerFields,
            excluding: includingCredentials ? [] : RedirectPolicy.credentialHeaderNames)
        guard merged.count != request.headerFields.count else { return nil }
        var configured = request
        configured.headerFields = merged
        return configured
    }
}
