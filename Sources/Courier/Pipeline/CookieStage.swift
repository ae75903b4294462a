import CourierHTTP
import Foundation

/// Sends the session's cookies: when the configuration's `httpShouldSetCookies` and the request's
/// `httpShouldHandleCookies` are both `true` and the configuration has an `httpCookieStorage`, adds a `Cookie` header
/// with the storage's cookies for the request's URL, unless the request already has a `Cookie` header.
///
/// ``storeCookies(from:for:)`` is the response side: it stores a response's `Set-Cookie` cookies. The type is
/// package-visible so that tests can call it directly.
package struct CookieStage: RequestStage {
    func prepare(_ request: inout URLRequest, task: URLSessionTask) throws(TransferError) {
        let configuration = task.session.sessionConfiguration
        guard configuration.httpShouldSetCookies, request.httpShouldHandleCookies,
            let storage = configuration.httpCookieStorage, let url = request.url,
            request.value(forHTTPHeaderField: "Cookie") == nil,
            let cookies = storage.cookies(for: url), !cookies.isEmpty
        else { return }
        for (name, value) in HTTPCookie.requestHeaderFields(with: cookies) {
            request.setValue(value, forHTTPHeaderField: name)
        }
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
    ///   - task: The task that received it.
    package static func storeCookies(from response: HTTPURLResponse, for task: URLSessionTask) {
        let configuration = task.session.sessionConfiguration
        let request = task.currentRequest
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
        let cookies = HTTPCookie.cookies(withResponseHeaderFields: response.headerFields.dictionary, for: url)
        guard !cookies.isEmpty else { return }
        storage.setCookies(cookies, for: url, mainDocumentURL: mainDocumentURL)
    }
}
