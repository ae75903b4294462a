import Courier
import Foundation

/// Cookie files in the Netscape format that curl, wget and browsers' exporters read and write (`-b FILE`,
/// `-c FILE`): one cookie per line, seven tab-separated fields — domain, whether subdomains match (`TRUE`/`FALSE`),
/// path, secure (`TRUE`/`FALSE`), expiry (Unix time, 0 for a session cookie), name, value — with `#HttpOnly_` before
/// the domain of an HTTP-only cookie; other lines starting with `#` are comments.
enum NetscapeCookieFile {
    /// The cookies of `text` that are well formed and not expired at `now`; malformed lines are counted in
    /// `skipped`, never fatal (a file written by another tool may have extensions).
    static func parse(_ text: String, now: Date = Date()) -> (cookies: [HTTPCookie], skipped: Int) {
        var cookies: [HTTPCookie] = []
        var skipped = 0
        for rawLine in text.split(omittingEmptySubsequences: true, whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            var line = rawLine.hasSuffix("\r") ? rawLine.dropLast() : rawLine[...]
            var httpOnly = false
            if line.hasPrefix("#HttpOnly_") {
                httpOnly = true
                line = line.dropFirst("#HttpOnly_".count)
            } else if line.hasPrefix("#") || line.allSatisfy(\.isWhitespace) {
                continue
            }
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard fields.count == 7, !fields[0].isEmpty, !fields[5].isEmpty, let expiry = Int64(fields[4]) else {
                skipped += 1
                continue
            }
            let includesSubdomains = fields[1].uppercased() == "TRUE"
            var domain = fields[0]
            if includesSubdomains, !domain.hasPrefix(".") { domain = "." + domain }
            if !includesSubdomains, domain.hasPrefix(".") { domain.removeFirst() }
            var properties: [HTTPCookiePropertyKey: Any] = [
                .domain: domain, .path: fields[2].isEmpty ? "/" : fields[2], .name: fields[5], .value: fields[6],
            ]
            if fields[3].uppercased() == "TRUE" { properties[.secure] = "TRUE" }
            if expiry > 0 {
                let expires = Date(timeIntervalSince1970: TimeInterval(expiry))
                guard expires > now else { continue }
                properties[.expires] = expires
            }
            if httpOnly { properties[HTTPCookiePropertyKey("HttpOnly")] = "TRUE" }
            guard let cookie = HTTPCookie(properties: properties) else {
                skipped += 1
                continue
            }
            cookies.append(cookie)
        }
        return (cookies, skipped)
    }

    /// `cookies` in the file format, with curl's header line. A cookie with a tab or a line break in a field is left
    /// out, as curl leaves it out: the format cannot escape one, and a tab a server put in a `Path` would shift the
    /// fields of its line (a line break would start a line of the server's making).
    static func format(_ cookies: [HTTPCookie]) -> String {
        var text = "# Netscape HTTP Cookie File\n# Written by courier. Edit at your own risk.\n\n"
        for cookie in cookies {
            let includesSubdomains = cookie.domain.hasPrefix(".")
            // Clamped: a server's Max-Age can push the date past what an Int64 holds (the file format's limit is
            // year 9999 in practice).
            let expiry = cookie.expiresDate.map { Int64(min(max($0.timeIntervalSince1970, 1), 253_402_300_799)) } ?? 0
            let fields = [
                (cookie.isHTTPOnly ? "#HttpOnly_" : "") + cookie.domain, includesSubdomains ? "TRUE" : "FALSE",
                cookie.path, cookie.isSecure ? "TRUE" : "FALSE", "\(expiry)", cookie.name, cookie.value,
            ]
            // Bytes, not Characters: in a Swift string "\r\n" is one Character, which matches neither a lone CR nor a
            // lone LF.
            guard !fields.contains(where: { $0.utf8.contains { $0 == 9 || $0 == 10 || $0 == 13 } }) else { continue }
            text += fields.joined(separator: "\t") + "\n"
        }
        return text
    }
}
