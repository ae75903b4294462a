import Foundation

/// The task variants Apple declares in an extension of `HTTPCookieStorage`. Each uses the task's current request.
///
/// Apple's are `open` (Objective-C methods); these are `public`, because Swift cannot override a method declared
/// in an extension. Override the URL-based methods instead, which these call.
extension HTTPCookieStorage {
    /// Stores cookies for a task's current request, as ``setCookies(_:for:mainDocumentURL:)`` does with the
    /// request's URL and main document URL (following the storage's accept policy).
    ///
    /// - Parameters:
    ///   - cookies: The cookies to store.
    ///   - task: The task whose current request received them.
    public func storeCookies(_ cookies: [HTTPCookie], for task: URLSessionTask) {
        let request = task.currentRequest
        setCookies(cookies, for: request?.url, mainDocumentURL: request?.mainDocumentURL)
    }

    /// Passes the cookies to send with a task's current request to a completion handler: `nil` when the task has
    /// no request URL or the URL has no host.
    ///
    /// The handler is called before this method returns, on the calling thread.
    ///
    /// - Parameters:
    ///   - task: The task.
    ///   - completionHandler: Receives the cookies.
    public func getCookiesFor(_ task: URLSessionTask, completionHandler: @escaping @Sendable ([HTTPCookie]?) -> Void) {
        completionHandler(cookies(forTaskRequest: task))
    }

    /// Returns the cookies to send with a task's current request: `nil` when the task has no request URL or the URL
    /// has no host.
    ///
    /// - Parameter task: The task.
    public func cookies(for task: URLSessionTask) async -> [HTTPCookie]? {
        cookies(forTaskRequest: task)
    }

    private func cookies(forTaskRequest task: URLSessionTask) -> [HTTPCookie]? {
        task.currentRequest?.url.flatMap { cookies(for: $0) }
    }
}
