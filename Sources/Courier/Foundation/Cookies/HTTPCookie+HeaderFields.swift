import CourierHTTP
import Foundation

extension HTTPCookie {
    /// Implements ``HTTPCookie/requestHeaderFields(with:)``.
    static func cookieHeaderFields(with cookies: [HTTPCookie]) -> [String: String] {
        guard !cookies.isEmpty else { return [:] }
        return ["Cookie": cookies.map { "\($0.name)=\($0.value)" }.joined(separator: "; ")]
    }

    /// Implements ``HTTPCookie/cookies(withResponseHeaderFields:for:)``.
    static func parseCookies(withResponseHeaderFields headerFields: [String: String], for URL: URL) -> [HTTPCookie] {
        let values = headerFields.filter { HeaderName.equal($0.key, "Set-Cookie") }.map(\.value)
        return parseCookies(lines: values.flatMap(SetCookie.split(combined:)), for: URL)
    }

    /// The cookies of `Set-Cookie` values taken one per line, as received (never split at commas).
    static func parseCookies(lines: [String], for URL: URL) -> [HTTPCookie] {
        guard let host = URL.host, !host.isEmpty else { return [] }
        let now = Date()
        let requestPath = URL.path(percentEncoded: true)
        return lines.compactMap { text in
            SetCookie.parse(text, host: host, requestPath: requestPath, now: now).flatMap { cookie(from: $0, url: URL) }
        }
    }

    private static func cookie(from parsed: SetCookie, url: URL) -> HTTPCookie? {
        var properties: [HTTPCookiePropertyKey: Any] = [
            .name: parsed.name,
            .value: parsed.value,
            .domain: parsed.isHostOnly ? parsed.domain : "." + parsed.domain,
            .path: parsed.path,
            .version: "0",
            .originURL: url,
        ]
        properties[.expires] = parsed.expires
        properties[.secure] = parsed.isSecure ? "TRUE" : nil
        properties[.httpOnly] = parsed.isHTTPOnly ? "TRUE" : nil
        properties[.sameSitePolicy] = parsed.sameSite
        properties[.comment] = parsed.comment
        properties[.commentURL] = parsed.commentURL.flatMap(URL.init(string:))
        properties[.discard] = parsed.isDiscard ? "TRUE" : nil
        return HTTPCookie(properties: properties)
    }
}
