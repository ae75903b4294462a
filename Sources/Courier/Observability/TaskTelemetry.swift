import CourierHTTP
import CourierTransport
import Foundation
import Tracing

/// One task's span and metrics, fed by its engine (on the engine's executor, so without locks): a client span from
/// the first `resume()` to the completion, with OpenTelemetry's HTTP client attributes and events for redirects,
/// challenges, resumes and cache hits; the request counters and timers; and the propagation headers of each attempt.
/// Made only when the session's telemetry ``SessionTelemetry/isActive``.
final class TaskTelemetry {
    private let session: SessionTelemetry
    private let span: (any Span)?
    private let startNanoseconds = DispatchTime.now().uptimeNanoseconds
    private let method: String
    private let scheme: String
    private let host: String
    private let isDownload: Bool
    private var resendCount = 0
    private var sawFirstByte = false
    private var status: Int?
    private var protocolName: String?
    private var requestBodyBytes: Int64 = 0
    private var responseBodyBytes: Int64 = 0
    private var usedCache = false
    private var servedFromCache = false
    private var wentToNetwork = false

    /// Starts the span as a child of `parent` (the context where the task was made) and counts the request.
    init(session: SessionTelemetry, request: URLRequest, parent: ServiceContext, isDownload: Bool) {
        self.session = session
        let url = request.url
        let method = request.httpMethod ?? "GET"
        let scheme = url?.scheme?.lowercased() ?? "-"
        self.method = method
        self.scheme = scheme
        host = url?.host(percentEncoded: false) ?? "-"
        self.isDownload = isDownload
        span = session.tracer.map { tracer in
            Self.startSpan(
                tracer, method: method, url: url, parent: parent, keepsQuery: session.options.recordsURLQuery)
        }
        session.metrics?.count(SessionMetrics.Name.requestsStarted, requestDimensions)
        if isDownload { session.metrics?.adjust(SessionMetrics.Name.downloadsActive, by: 1) }
    }

    /// A client span named after the method, with the request's attributes.
    private static func startSpan(
        _ tracer: any Tracer, method: String, url: URL?, parent: ServiceContext, keepsQuery: Bool
    ) -> any Span {
        let span = tracer.startSpan("HTTP \(method)", context: parent, ofKind: .client)
        let known = knownMethods.contains(method)
        span.updateAttributes { attributes in
            attributes["http.request.method"] = known ? method : "_OTHER"
            if !known { attributes["http.request.method_original"] = method }
            guard let url else { return }
            let scheme = url.scheme?.lowercased() ?? "-"
            attributes["url.full"] = redacted(url, keepsQuery: keepsQuery)
            attributes["url.scheme"] = scheme
            attributes["server.address"] = url.host(percentEncoded: false) ?? "-"
            if let port = url.port ?? defaultPort(scheme) { attributes["server.port"] = Int64(port) }
        }
        return span
    }

    // MARK: Events from the engine

    /// Adds the tracer's propagation headers to an attempt's request, unless the app's request carries
    /// `traceparent` already or the session turned propagation off.
    func inject(into headers: inout [(String, String)]) {
        guard let span, let tracer = session.tracer, session.options.propagatesTraceContext,
            !headers.contains(where: { HeaderName.equal($0.0, "traceparent") })
        else { return }
        tracer.inject(span.context, into: &headers, using: HeaderListInjector())
    }

    /// The trace identifier for log lines: from the W3C `traceparent` the tracer would send, or a field named like
    /// a trace id; `nil` without a span.
    var traceID: String? {
        guard let span, let tracer = session.tracer else { return nil }
        var fields: [(String, String)] = []
        tracer.inject(span.context, into: &fields, using: HeaderListInjector())
        if let parent = fields.first(where: { HeaderName.equal($0.0, "traceparent") })?.1 {
            let parts = parent.split(separator: "-")
            return parts.count >= 2 ? String(parts[1]) : parent
        }
        return fields.first { $0.0.lowercased().replacingOccurrences(of: "_", with: "-").contains("trace-id") }?.1
    }

    /// A response source started for an attempt.
    func sourceStarted(_ origin: TransactionRecord.Origin, cacheInUse: Bool) {
        usedCache = usedCache || cacheInUse
        switch origin {
        case .cache:
            servedFromCache = true
            span?.addEvent(SpanEvent(name: "http.cache_hit"))
        case .network: wentToNetwork = true
        case .local: break
        }
    }

    /// The task follows a redirect (`isRedirect`) or retries after a challenge.
    func followedUp(to url: URL?, isRedirect: Bool) {
        resendCount += 1
        guard isRedirect, let span else { return }
        var attributes: SpanAttributes = [:]
        if let url {
            attributes["url.full"] = (Self.redacted(url, keepsQuery: session.options.recordsURLQuery))
        }
        span.addEvent(SpanEvent(name: "http.redirect", attributes: attributes))
    }

    /// A 401 or 407 asked for credentials.
    func challenged(method authenticationMethod: String, realm: String?, isProxy: Bool) {
        guard let span else { return }
        var attributes: SpanAttributes = ["courier.auth.method": .string(authenticationMethod)]
        attributes["courier.auth.proxy"] = (isProxy)
        if let realm { attributes["courier.auth.realm"] = (realm) }
        span.addEvent(SpanEvent(name: "http.auth_challenge", attributes: attributes))
    }

    /// A download continues a partial file at `offset` (0: it starts over).
    func resumed(at offset: Int64) {
        span?.addEvent(SpanEvent(name: "http.resume", attributes: ["courier.resume.offset": .int64(offset)]))
    }

    /// The final response of an attempt was accepted.
    func responded(_ response: URLResponse) {
        status = (response as? HTTPURLResponse)?.statusCode
        guard !sawFirstByte else { return }
        sawFirstByte = true
        session.metrics?.record(
            SessionMetrics.Name.timeToFirstByte, requestDimensions, nanoseconds: elapsedNanoseconds)
    }

    /// An exchange ended: its connection, handshakes and byte counts.
    func exchanged(_ timeline: TransportTimeline) {
        protocolName = timeline.protocolName ?? protocolName
        requestBodyBytes += timeline.requestBodyBytesSent
        responseBodyBytes += timeline.responseBodyBytesReceived
        guard let metrics = session.metrics else { return }
        let scheme: [(String, String)] = [("scheme", self.scheme)]
        metrics.count(
            SessionMetrics.Name.bytesSent, scheme, by: timeline.requestHeaderBytesSent + timeline.requestBodyBytesSent)
        metrics.count(
            SessionMetrics.Name.bytesReceived, scheme,
            by: timeline.responseHeaderBytesReceived + timeline.responseBodyBytesReceived)
        let connection = scheme + [("protocol", timeline.protocolName ?? "unknown")]
        if timeline.isReusedConnection {
            metrics.count(SessionMetrics.Name.connectionsReused, connection)
            return
        }
        metrics.count(SessionMetrics.Name.connectionsOpened, connection)
        if let start = timeline.connectStart, let end = timeline.connectEnd {
            metrics.record(SessionMetrics.Name.connectDuration, nanoseconds: Self.nanoseconds(from: start, to: end))
        }
        if let start = timeline.secureConnectionStart, let end = timeline.secureConnectionEnd {
            metrics.count(SessionMetrics.Name.tlsHandshakes)
            metrics.record(
                SessionMetrics.Name.tlsHandshakeDuration, nanoseconds: Self.nanoseconds(from: start, to: end))
        }
    }

    /// The task is over: the span gets its outcome and ends; the request is counted as completed or failed.
    func completed(error: URLError?) {
        let outcome = error == nil ? status.map { "\($0 / 100)xx" } ?? "none" : "error"
        if let metrics = session.metrics {
            if let error {
                metrics.count(
                    SessionMetrics.Name.requestsFailed, requestDimensions + [("error", Self.name(of: error.code))])
            } else {
                metrics.count(SessionMetrics.Name.requestsCompleted, requestDimensions + [("status_class", outcome)])
            }
            metrics.record(
                SessionMetrics.Name.requestDuration, requestDimensions + [("outcome", outcome)],
                nanoseconds: elapsedNanoseconds)
            if isDownload { metrics.adjust(SessionMetrics.Name.downloadsActive, by: -1) }
            if usedCache {
                let result = servedFromCache ? (wentToNetwork ? "revalidated" : "hit") : "miss"
                metrics.count(SessionMetrics.Name.cacheLookups, [("result", result)])
            }
        }
        guard let span else { return }
        span.updateAttributes { attributes in
            if let status { attributes["http.response.status_code"] = (Int64(status)) }
            if let version = Self.protocolVersion(protocolName) { attributes["network.protocol.version"] = (version) }
            attributes["http.request.body.size"] = (requestBodyBytes)
            attributes["http.response.body.size"] = (responseBodyBytes)
            if resendCount > 0 { attributes["http.request.resend_count"] = (Int64(resendCount)) }
            if let error {
                attributes["error.type"] = (Self.name(of: error.code))
            } else if let status, status >= 400 {
                attributes["error.type"] = ("\(status)")
            }
        }
        if let error {
            span.recordError(Self.redacted(error, keepsQuery: session.options.recordsURLQuery))
            span.setStatus(SpanStatus(code: .error, message: Self.name(of: error.code)))
        } else if let status, status >= 400 {
            span.setStatus(SpanStatus(code: .error))
        }
        span.end()
    }

    // MARK: Helpers

    private var requestDimensions: [(String, String)] {
        var dimensions = [("method", Self.knownMethods.contains(method) ? method : "_OTHER"), ("scheme", scheme)]
        if session.options.metricsIncludeHost { dimensions.append(("host", host)) }
        return dimensions
    }

    private var elapsedNanoseconds: Int64 {
        Int64(DispatchTime.now().uptimeNanoseconds &- startNanoseconds)
    }

    private static let knownMethods: Set<String> = [
        "CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "TRACE",
    ]

    private static func defaultPort(_ scheme: String) -> Int? {
        switch scheme {
        case "http", "ws": 80
        case "https", "wss": 443
        default: nil
        }
    }

    private static func nanoseconds(from start: Date, to end: Date) -> Int64 {
        Int64(max(0, end.timeIntervalSince(start)) * 1_000_000_000)
    }

    /// `url` as `url.full` may carry it: user and password replaced by `REDACTED` (OpenTelemetry's convention), and
    /// without its query unless `keepsQuery`.
    static func redacted(_ url: URL, keepsQuery: Bool) -> String {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: true) else { return "-" }
        if !keepsQuery { components.query = nil }
        components.fragment = nil
        return components.url?.textWithoutCredentials(marking: URL.redactedCredentialMarker) ?? "-"
    }

    /// `error` as the span records it. Tracers export a recorded error's description as `exception.message`, and a
    /// `URLError`'s description prints its whole user info: the failing URL, `user:password@` and query included.
    /// So the recorded copy keeps the code and the localized description, and the failing URL only as `url.full`
    /// carries it (the app's error is left as it is, as Darwin's).
    static func redacted(_ error: URLError, keepsQuery: Bool) -> URLError {
        var userInfo: [String: Any] = [:]
        if let description = error.userInfo[NSLocalizedDescriptionKey] {
            userInfo[NSLocalizedDescriptionKey] = description
        }
        if let url = error.userInfo[NSURLErrorFailingURLErrorKey] as? URL {
            let text = redacted(url, keepsQuery: keepsQuery)
            userInfo[URLErrorMapping.failingURLStringKey] = text
            if let redactedURL = URL(string: text) { userInfo[NSURLErrorFailingURLErrorKey] = redactedURL }
        }
        return URLError(error.code, userInfo: userInfo)
    }

    /// `network.protocol.version` for an ALPN name.
    private static func protocolVersion(_ name: String?) -> String? {
        switch name {
        case "http/1.1": "1.1"
        case "http/1.0": "1.0"
        case "h2": "2"
        case "h3": "3"
        default: nil
        }
    }

    /// A low-cardinality name for an error code (`error.type`, the `error` dimension).
    static func name(of code: URLError.Code) -> String {
        switch code {
        case .cancelled: "cancelled"
        case .timedOut: "timedOut"
        case .cannotFindHost: "cannotFindHost"
        case .cannotConnectToHost: "cannotConnectToHost"
        case .networkConnectionLost: "networkConnectionLost"
        case .notConnectedToInternet: "notConnectedToInternet"
        case .badServerResponse: "badServerResponse"
        case .badURL: "badURL"
        case .unsupportedURL: "unsupportedURL"
        case .secureConnectionFailed: "secureConnectionFailed"
        case .serverCertificateUntrusted: "serverCertificateUntrusted"
        case .serverCertificateHasBadDate: "serverCertificateHasBadDate"
        case .serverCertificateHasUnknownRoot: "serverCertificateHasUnknownRoot"
        case .clientCertificateRequired: "clientCertificateRequired"
        case .userAuthenticationRequired: "userAuthenticationRequired"
        case .httpTooManyRedirects: "httpTooManyRedirects"
        case .cannotDecodeContentData: "cannotDecodeContentData"
        case .cannotCreateFile: "cannotCreateFile"
        case .cannotWriteToFile: "cannotWriteToFile"
        case .resourceUnavailable: "resourceUnavailable"
        case .dataLengthExceedsMaximum: "dataLengthExceedsMaximum"
        default: "URLError\(code.rawValue)"
        }
    }
}

/// Writes propagation headers into a request's field list, replacing fields of the same name.
struct HeaderListInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout [(String, String)]) {
        carrier.removeAll { HeaderName.equal($0.0, key) }
        carrier.append((key, value))
    }
}
