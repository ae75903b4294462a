import Foundation

/// What following a redirect changes in the request (RFC 9110 §15.4, with the method rewriting Darwin applies).
public struct RedirectPlan: Hashable, Sendable {
    /// The absolute URL to request next.
    public var url: URL
    /// The method of the next request.
    public var method: String
    /// Whether the body (and the header fields that describe it) is dropped.
    public var dropsBody: Bool
    /// Header field names to remove (case-insensitive), e.g. credentials on a cross-origin hop.
    public var removedHeaderNames: [String]
}

/// Redirect decisions as pure functions of values.
public enum RedirectPolicy {
    /// Darwin follows this many redirects in a row and fails the next with `URLError(.httpTooManyRedirects)`: 20
    /// since macOS 11 (swift-corelibs-foundation moved from 16 to 20 "to match macOS 11", checked on macOS; CFNetwork
    /// stopped at 16 before), as browsers do.
    public static let maximumRedirects = 20

    /// Header fields that describe a body and go when the body goes.
    static let bodyHeaderNames = ["Content-Type", "Content-Length", "Content-Encoding", "Transfer-Encoding"]

    /// Header fields that carry credentials and never cross to another origin.
    public static let credentialHeaderNames = ["Authorization", "Cookie", "Proxy-Authorization"]

    /// Whether `status` is a redirect that can be followed: 301, 302, 303, 305, 306, 307 or 308, as Darwin follows
    /// them (swift-corelibs-foundation's redirect rules, written to match Darwin's, and its tests). 305 and 306 keep
    /// the method, as 307 does: the `Location` is requested, never used as a proxy. 300 (its body lists the
    /// choices) and 304 are answers.
    public static func isRedirectStatus(_ status: Int) -> Bool {
        switch status {
        case 301, 302, 303, 305, 306, 307, 308: true
        default: false
        }
    }

    /// The plan for following a response, or `nil` when it is not a redirect that can be followed (not one of
    /// ``isRedirectStatus(_:)``'s; no or invalid `Location`; an http or https URL without a host; Courier's
    /// `http+unix`/`https+unix` to another socket: nothing redirects a request onto a local socket it was not on,
    /// or a web server could reach the daemons behind them).
    ///
    /// A target of another scheme (`myapp://callback?code=…`, `file:`) has a plan, as on Darwin, where the delegate's
    /// `willPerformHTTPRedirection` is asked about it (apps catch OAuth callbacks there); following it fails with
    /// `unsupportedURL` (``refusesRedirect(from:to:)``), it is never loaded.
    public static func plan(status: Int, location: String?, method: String, currentURL: URL) -> RedirectPlan? {
        guard isRedirectStatus(status), let location,
            !location.trimmingCharacters(in: .whitespaces).isEmpty
        else { return nil }
        let trimmed = location.trimmingCharacters(in: .whitespaces)
        guard let target = URL(string: trimmed, relativeTo: currentURL)?.absoluteURL,
            let scheme = target.scheme?.lowercased()
        else { return nil }
        if scheme.hasSuffix("+unix") && !isSameOrigin(currentURL, target) { return nil }
        if (scheme == "http" || scheme == "https" || scheme.hasSuffix("+unix")) && target.host == nil { return nil }

        let upperMethod = method.uppercased()
        var newMethod = method
        var dropsBody = false
        switch status {
        case 303:
            // Every method, HEAD included, becomes GET, as on Darwin (the Fetch standard keeps HEAD; Darwin does not).
            newMethod = "GET"
            dropsBody = true
        case 301, 302:
            if upperMethod == "POST" {
                newMethod = "GET"
                dropsBody = true
            }
        default:
            break
        }
        var removed: [String] = dropsBody ? bodyHeaderNames : []
        if !isSameOrigin(currentURL, target) {
            removed += credentialHeaderNames
        }
        return RedirectPlan(url: target, method: newMethod, dropsBody: dropsBody, removedHeaderNames: removed)
    }

    /// Whether following a redirect from `currentURL` to `target` fails with `unsupportedURL` instead of loading
    /// it: the request was on http, https or a Unix socket, and the target is not (a custom scheme, `file:`,
    /// `data:`, a scheme a registered `URLProtocol` handles, another socket). A server's `Location` must not make
    /// the client read a local file or hand the request to other code. A request already on another scheme (a
    /// custom `URLProtocol`'s, whose download may be asked for again) is left to that protocol.
    public static func refusesRedirect(from currentURL: URL, to target: URL) -> Bool {
        isOnHTTP(currentURL, startedAt: currentURL) && !isOnHTTP(target, startedAt: currentURL)
    }

    /// http and https with a host, and `http+unix` / `https+unix` on the socket of `start`.
    private static func isOnHTTP(_ url: URL, startedAt start: URL) -> Bool {
        guard let scheme = url.scheme?.lowercased(), url.host != nil else { return false }
        if scheme == "http" || scheme == "https" { return true }
        return scheme.hasSuffix("+unix") && isSameOrigin(start, url)
    }

    /// Whether two URLs share scheme, host and port.
    public static func isSameOrigin(_ lhs: URL, _ rhs: URL) -> Bool {
        func port(_ url: URL) -> Int? {
            url.port ?? (url.scheme?.lowercased() == "https" ? 443 : url.scheme?.lowercased() == "http" ? 80 : nil)
        }
        return lhs.scheme?.lowercased() == rhs.scheme?.lowercased()
            && lhs.host?.lowercased() == rhs.host?.lowercased()
            && port(lhs) == port(rhs)
    }
}
