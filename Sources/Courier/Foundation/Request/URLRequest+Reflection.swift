import Foundation

extension URLRequest: CustomReflectable {
    /// The request's main properties as a mirror's children, named and ordered as FoundationNetworking lists them
    /// (the cache policy as its raw value).
    public var customMirror: Mirror {
        let children: [(label: String?, value: Any)] = [
            ("url", url as Any),
            ("cachePolicy", cachePolicy.rawValue),
            ("timeoutInterval", timeoutInterval),
            ("mainDocumentURL", mainDocumentURL as Any),
            ("networkServiceType", networkServiceType),
            ("allowsCellularAccess", allowsCellularAccess),
            ("httpMethod", httpMethod as Any),
            ("allHTTPHeaderFields", allHTTPHeaderFields as Any),
            ("httpBody", httpBody as Any),
            ("httpBodyStream", httpBodyStream as Any),
            ("httpShouldHandleCookies", httpShouldHandleCookies),
            ("httpShouldUsePipelining", httpShouldUsePipelining),
        ]
        return Mirror(self, children: children, displayStyle: .struct)
    }
}
