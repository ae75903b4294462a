import Courier
import CourierHTTP
import Foundation

/// Everything the options decide, checked and resolved once, shared by every transfer of the run.
struct TransferSettings: Sendable {
    /// `--retry` and its companions.
    struct RetryPolicy: Sendable {
        var attempts = 0
        var delay: Double?
        var maximumTime: Double?
        var connectionRefusedIsTransient = false

        /// HTTP answers that are worth asking again, as curl's.
        static let transientStatuses: Set<Int> = [408, 429, 500, 502, 503, 504]

        /// Whether a task that failed with `error` may be retried.
        func isTransient(_ error: URLError) -> Bool {
            switch error.code {
            case .timedOut, .networkConnectionLost, .notConnectedToInternet, .zeroByteResource: true
            case .cannotConnectToHost: connectionRefusedIsTransient
            default: false
            }
        }

        /// The wait before retry number `retry` (1-based): the fixed delay, else 1 s doubling up to 10 minutes;
        /// at least what the server's `Retry-After` asked.
        func wait(beforeRetry retry: Int, retryAfter: Double?) -> Double {
            let base = delay.flatMap { $0 > 0 ? $0 : nil } ?? min(600, pow(2, Double(retry - 1)))
            return max(base, min(retryAfter ?? 0, 600))
        }
    }

    var method: String?
    var headers: [(name: String, value: String)] = []
    var body: Data?
    /// `-G`: the body goes in the URL's query and the method stays `GET` (URLSession refuses a `GET` with a body).
    var dataInQuery = false
    var includeHeaders = false
    var head = false
    var failOnHTTPError = false
    var verbose = false
    var continueDownloads = false
    var showProgress = false
    var showErrors = true
    var writeOut: String?
    var maxRedirects = RedirectPolicy.maximumRedirects
    var credentials: (user: String, password: String)?
    var proxyCredentials: (user: String, password: String)?
    var limitRate: Int64?
    var retry = RetryPolicy()
    var trust = TrustPolicy()
    var allowsHTTP2 = true
    /// `--proxy` and `--noproxy` as `connectionProxyDictionary` entries (strings, which Courier reads as numbers
    /// and flags where it needs them; the exceptions list is joined by commas).
    var proxyDictionary: [String: String]?
    var requestTimeout: Double?
    var resourceTimeout: Double?
    var maximumConnectionsPerHost = 6

    /// The request for `url`.
    func request(for url: URL) -> URLRequest {
        var request = URLRequest(url: dataInQuery ? Self.url(url, appendingQuery: body) : url)
        for header in headers { request.addValue(header.value, forHTTPHeaderField: header.name) }
        if let body, !dataInQuery {
            request.httpBody = body
            request.httpMethod = "POST"
            if request.value(forHTTPHeaderField: "Content-Type") == nil {
                request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
            }
        }
        if head { request.httpMethod = "HEAD" }
        if let method { request.httpMethod = method.uppercased() }
        return request
    }

    /// `url` with `data` added to its query, after a `&` when it has one, as curl's `-G` adds it: as given, so that
    /// data already percent-encoded (`q=a%20b`) stays so; characters a query cannot hold (a space, `#`) are
    /// percent-encoded, and so is a `%` that starts no escape (`100%` becomes `100%25`, beside escapes left alone).
    static func url(_ url: URL, appendingQuery data: Data?) -> URL {
        guard let data, !data.isEmpty,
            var components = URLComponents(url: url, resolvingAgainstBaseURL: true)
        else { return url }
        var allowed = CharacterSet.urlQueryAllowed
        allowed.insert("%")
        let encoded =
            Self.escapingStrayPercents(String(decoding: data, as: UTF8.self))
            .addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
        let query = [components.percentEncodedQuery, encoded].compactMap { $0 }.filter { !$0.isEmpty }
        components.percentEncodedQuery = query.joined(separator: "&")
        return components.url ?? url
    }

    /// `text` with each `%` that is not followed by two hexadecimal digits written as `%25`.
    private static func escapingStrayPercents(_ text: String) -> String {
        let scalars = Array(text.unicodeScalars)
        var result = String.UnicodeScalarView()
        for (index, scalar) in scalars.enumerated() {
            result.append(scalar)
            guard scalar == "%" else { continue }
            let escape = scalars.dropFirst(index + 1).prefix(2)
            if escape.count < 2 || !escape.allSatisfy(\.properties.isASCIIHexDigit) {
                result.append(contentsOf: "25".unicodeScalars)
            }
        }
        return String(result)
    }

    /// A session configuration for these settings: ephemeral (no disk cache, cookies or credentials kept beyond the
    /// run, like curl), the shared `cookies`, and `downloadDirectory` for download tasks.
    func configuration(cookies: HTTPCookieStorage?, downloadDirectory: URL?) -> URLSessionConfiguration {
        let configuration = URLSessionConfiguration.ephemeral
        // The body streams to a file or standard output at the pace they take it, never piling up in memory, so
        // like curl the tool does not cap how far a compressed body may inflate.
        configuration.courierMaximumDecompressionRatio = nil
        configuration.urlCache = nil
        configuration.httpCookieStorage = cookies
        configuration.httpCookieAcceptPolicy = .always
        configuration.courierAllowsHTTP2 = allowsHTTP2
        configuration.httpMaximumConnectionsPerHost = maximumConnectionsPerHost
        configuration.connectionProxyDictionary = proxyDictionary.map { entries in
            var dictionary: [AnyHashable: Any] = [:]
            for (key, value) in entries {
                dictionary[key] = key == "ExceptionsList" ? value.split(separator: ",").map(String.init) : value
            }
            return dictionary
        }
        if let requestTimeout { configuration.timeoutIntervalForRequest = requestTimeout }
        if let resourceTimeout { configuration.timeoutIntervalForResource = resourceTimeout }
        if let downloadDirectory { configuration.courierDownloadDirectory = downloadDirectory }
        return configuration
    }

    /// `connectionProxyDictionary` for `--proxy URL` and `--noproxy LIST`; `nil` without a proxy (the environment's
    /// `http_proxy` family then applies, as in curl). Throws a message for a URL it cannot use.
    static func proxyDictionary(proxy: String?, noProxy: String?) throws -> [String: String]? {
        let exceptions = (noProxy ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
        if exceptions.contains("*") { return [:] }
        guard let proxy else { return nil }
        let text = proxy.contains("://") ? proxy : "http://" + proxy
        guard let url = URL(string: text), let host = url.host, !host.isEmpty, let scheme = url.scheme?.lowercased()
        else {
            // The text as given may hold a password (a typo in `http://user:password@proxy:3128`): named without it.
            let named = proxyTextWithoutCredentials(proxy)
            throw CLIError("--proxy must look like http://host:port or socks5://host:port, not \(named)", exitCode: 5)
        }
        var dictionary = ["ExceptionsList": exceptions.joined(separator: ",")]
        switch scheme {
        case "http":
            let port = url.port ?? 1080
            dictionary.merge(
                [
                    "HTTPEnable": "1", "HTTPProxy": host, "HTTPPort": "\(port)", "HTTPSEnable": "1", "HTTPSProxy": host,
                    "HTTPSPort": "\(port)",
                ], uniquingKeysWith: { $1 })
        case "socks5", "socks5h":
            dictionary.merge(
                ["SOCKSEnable": "1", "SOCKSProxy": host, "SOCKSPort": "\(url.port ?? 1080)"], uniquingKeysWith: { $1 })
            // Decoded once, as curl does (`URL.user` alone decodes by default).
            if let user = url.user(percentEncoded: false) { dictionary["SOCKSUser"] = user }
            if let password = url.password(percentEncoded: false) { dictionary["SOCKSPassword"] = password }
        default:
            throw CLIError("--proxy supports http:// and socks5:// proxies, not \(scheme)://", exitCode: 5)
        }
        return dictionary
    }

    /// `proxy` as text for a message, without the user info a password may be in: what lies between the scheme's
    /// `://` (or the start, without a scheme) and the last `@` goes, as `URL.textWithoutCredentials()` drops it from a
    /// URL — also when the text is not a valid URL, as a `--proxy` that is refused often is, with a real password.
    static func proxyTextWithoutCredentials(_ proxy: String) -> String {
        guard let at = proxy.lastIndex(of: "@") else { return proxy }
        var start = proxy.startIndex
        // Only a real scheme's `://` (RFC 3986 §3.1: a letter, then letters, digits, `+`, `-`, `.`): one inside a
        // password (`user:pa://ss@host`) must not keep what comes before it.
        if let separator = proxy.range(of: "://"), separator.upperBound <= at {
            let scheme = proxy[..<separator.lowerBound]
            let isScheme =
                scheme.first.map { $0.isASCII && $0.isLetter } == true
                && scheme.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }
            if isScheme { start = separator.upperBound }
        }
        return String(proxy[..<start]) + String(proxy[proxy.index(after: at)...])
    }

    /// The `user:password` in a proxy URL, for the proxy's 407.
    static func proxyCredentials(in proxy: String?) -> (user: String, password: String)? {
        guard let proxy, let url = URL(string: proxy.contains("://") ? proxy : "http://" + proxy),
            let scheme = url.scheme?.lowercased(), scheme == "http", let user = url.user(percentEncoded: false)
        else { return nil }
        return (user, url.password(percentEncoded: false) ?? "")
    }
}
