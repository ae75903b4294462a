import CourierHTTP
import Foundation

/// Sends the session's cookies: when the configuration's `httpShouldSetCookies` and the request's
/// `httpShouldHandleCookies` are both `true` and the configuration has an `httpCookieStorage`, adds a `Cookie` header
/// with the storage's cookies for the request's URL, unless the request already has a `Cookie` header.
///
/// ``storeCookies(from:configuration:request:)`` is the response side (``CookieStorageStage``): it stores a
/// response's `Set-Cookie` cookies. The type is package-visible so that tests can call it directly.
///
/// The storage may be an app's subclass (user code): then both sides wait, running on a Swift concurrency
/// thread; Courier's own `HTTPCookieStorage` is read at once.
package struct CookieStage: RequestStage {
    func immediate(_ request: URLRequest, in context: StageContext) throws(TransferError) -> RequestStep? {
        let settings = context.settings
        guard settings.shouldSetCookies, request.httpShouldHandleCookies,
            let storage = settings.cookieStorage, request.url != nil,
            request.value(forHTTPHeaderField: "Cookie") == nil
        else { return .proceed(request) }
        guard Self.isBuiltIn(storage) else { return nil }
        return .proceed(Self.addCookies(to: request, from: storage))
    }

    func process(_ request: URLRequest, in context: StageContext) async throws(TransferError) -> RequestStep {
        guard let storage = context.settings.cookieStorage else { return .proceed(request) }
        return .proceed(Self.addCookies(to: request, from: storage))
    }

    private static func addCookies(to original: URLRequest, from storage: HTTPCookieStorage) -> URLRequest {
        var request = original
        guard let url = request.url, !(isBuiltIn(storage) && storage.isEmpty),
            let cookies = storage.cookies(for: url), !cookies.isEmpty
        else { return request }
        for (name, value) in HTTPCookie.requestHeaderFields(with: cookies) {
            request.setValue(value, forHTTPHeaderField: name)
        }
        return request
    }

    /// Whether `storage` is Courier's own class, whose methods are not user code.
    static func isBuiltIn(_ storage: HTTPCookieStorage) -> Bool {
        type(of: storage) == HTTPCookieStorage.self
    }

    /// Stores the cookies `response` sets for `task`'s current request (see
    /// ``storeCookies(from:configuration:request:)``).
    package static func storeCookies(from response: HTTPURLResponse, for task: URLSessionTask) {
        storeCookies(from: response, configuration: task.session.sessionConfiguration, request: task.currentRequest)
    }

    /// Stores the cookies a response sets, when the response head arrives (also for a redirect response, before
    /// the redirect is followed, so that the next request carries them).
    ///
    /// Nothing is stored unless the configuration's `httpShouldSetCookies` and the task's current request's
    /// `httpShouldHandleCookies` are `true` and the configuration has an `httpCookieStorage`. The configuration's
    /// `httpCookieAcceptPolicy` applies: `.never` stores nothing, and `.onlyFromMainDocumentDomain` stores nothing
    /// when the request has a `mainDocumentURL` whose host neither domain-matches nor is domain-matched by the
    /// response's host. The storage then applies its own `cookieAcceptPolicy` in `setCookies(_:for:mainDocumentURL:)`.
    ///
    /// - Parameters:
    ///   - response: The response, whose `Set-Cookie` fields are parsed against its URL.
    ///   - configuration: The session's configuration.
    ///   - request: The request the response answers.
    static func storeCookies(
        from response: HTTPURLResponse,
        configuration: URLSessionConfiguration,
        request: URLRequest?
    ) {
        // Most responses set no cookie: leave before any other work.
        guard response.headerFields["Set-Cookie"] != nil else { return }
        guard configuration.httpShouldSetCookies, request?.httpShouldHandleCookies ?? true,
            let storage = configuration.httpCookieStorage, let url = response.url ?? request?.url,
            let host = url.host, !host.isEmpty
        else { return }
        let mainDocumentURL = request?.mainDocumentURL
        switch configuration.httpCookieAcceptPolicy {
        case .never:
            return
        case .onlyFromMainDocumentDomain:
            if let mainDocumentURL {
                guard let mainHost = mainDocumentURL.host,
                    CookieMatching.domainMatches(host: host, domain: mainHost)
                        || CookieMatching.domainMatches(host: mainHost, domain: host)
                else { return }
            }
        case .always:
            break
        }
        // Line by line as received when the response came from the network; a dictionary's joined values are split.
        let cookies =
            response.setCookieLines.map { HTTPCookie.parseCookies(lines: $0, for: url) }
            ?? HTTPCookie.cookies(withResponseHeaderFields: response.headerFields.dictionary, for: url)
        guard !cookies.isEmpty else { return }
        storage.setCookies(cookies, for: url, mainDocumentURL: mainDocumentURL)
    }
}
