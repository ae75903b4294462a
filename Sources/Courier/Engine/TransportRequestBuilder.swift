import CourierHTTP
import CourierTransport
import Foundation
import NIOCore
import NIOSSL

/// Turns a prepared `URLRequest` into the transport's request: method, header fields, body, timeouts, TLS.
enum TransportRequestBuilder {
    /// How the body is sent on this attempt.
    struct BodyState {
        /// A redirect rewrote the method (301/302 POST, 303): no body any more, not even an upload task's.
        var dropped = false
        /// A redirect's rule dropped the body once: the upload task's own data or file is never sent again, even when
        /// the delegate's `willPerformHTTPRedirection` gives the request a body back (that body is the one sent, as
        /// Darwin sends the request it is given). Never reset, unlike ``dropped``.
        var uploadDropped = false
        /// The body was sent before (a 307/308 hop): a stream cannot be read again, so ask the delegate.
        var sentBefore = false
    }

    static func make(
        from request: URLRequest,
        upload: UploadBody?,
        settings: StageSettings,
        options: TransportRequest.ConnectionOptions,
        takesConnectionOver: Bool = false,
        body bodyState: BodyState = BodyState(),
        bodyStreams: any TaskHost
    ) throws(TransferError) -> TransportRequest {
        guard let url = request.url else { throw .badURL("the request has no URL") }
        let method = request.httpMethod ?? "GET"
        guard Token.isToken(method) else {
            throw .badURL("the method \(method) is not a valid HTTP method")
        }
        // The request's own array of fields is handed on as it is (no copy per request) unless a value changes.
        var headers = request.headerFields.pairs
        for (index, field) in headers.enumerated() {
            // A line break or NUL in a field would let the value smuggle in fields or a second request; a line fold
            // that setValue accepted is unfolded, since a sender must not generate one (RFC 9112 §5.2).
            guard Token.isToken(field.0), let value = FieldValue.unfolded(field.1) else {
                throw .badURL("the header field \(field.0) is not a valid name or contains a line break or NUL")
            }
            if value != field.1 { headers[index].1 = value }
        }
        let body =
            bodyState.dropped
            ? .none
            : try makeBody(request: request, upload: upload, bodyState: bodyState, bodyStreams: bodyStreams)
        // The body-dependent rules of Darwin's HTTP loader, applied here where the body is known (a custom
        // URLProtocol gets the request without them). An empty body (no bytes, an empty file, a stream declared
        // `Content-Length: 0`) is no body; a stream of unknown length is one.
        if body.length != 0 {
            if MethodRules.refusesBody(method) {
                throw .urlError(
                    .dataLengthExceedsMaximum,
                    "a \(method) request cannot carry a body: send it with another method, or put it in the URL's query"
                )
            }
            if let type = MethodRules.defaultContentType(method),
                !headers.contains(where: { HeaderName.equal($0.0, "Content-Type") })
            {
                headers.append(("Content-Type", type))
            }
        }
        let timeout = effectiveTimeout(request: request, sessionTimeout: settings.requestTimeout)
        var transportRequest = try TransportRequest(
            method: method,
            url: url,
            headers: headers,
            body: body,
            idleTimeout: TaskEngine.timeAmount(timeout),
            options: options
        )
        if settings.routesThroughProxies {
            if let proxy = settings.proxyRules.proxy(for: url) {
                try route(&transportRequest, through: proxy, tunnel: takesConnectionOver)
            } else if let setting = settings.proxyRules.unusableSetting(for: url) {
                // Sent directly, the request would leave past the proxy the user set up for it.
                throw .unsupportedURL(
                    "\(setting) names a proxy Courier cannot speak (only http:// and socks5:// proxies); "
                        + "the request is not sent directly instead")
            }
        }
        return transportRequest
    }

    /// Sends `request` through `proxy`: `http` in absolute form with `Proxy-Authorization` for the proxy, `https`
    /// through a `CONNECT` tunnel that carries `Proxy-Authorization` itself (it never reaches the origin). Credentials
    /// given with the proxy (`http_proxy=http://user:password@…`) are sent ahead, as curl sends them.
    ///
    /// With `tunnel` (a request that takes its connection over on `101`, such as a WebSocket handshake) `http` goes
    /// through a tunnel too, as browsers send `ws://`: a proxy does not pass an upgrade on to the origin.
    ///
    /// A SOCKS5 proxy only connects: the request itself goes unchanged, in origin form.
    private static func route(
        _ request: inout TransportRequest, through proxy: ProxyServer, tunnel: Bool
    ) throws(TransferError) {
        request.proxy = proxy
        guard proxy.kind == .http else { return }
        var authorization = request.headers.first { HeaderName.equal($0.0, "Proxy-Authorization") }?.1
        if authorization == nil, let user = proxy.user {
            authorization = BasicAuthentication.authorizationValue(user: user, password: proxy.password ?? "")
        }
        if request.endpoint.scheme == .https || tunnel {
            request.headers.removeAll { HeaderName.equal($0.0, "Proxy-Authorization") }
            request.tunnelAuthorization = authorization
        } else {
            request.target = "http://\(request.endpoint.hostHeader)\(request.target)"
            if let authorization, !request.headers.contains(where: { HeaderName.equal($0.0, "Proxy-Authorization") }) {
                request.headers.append(("Proxy-Authorization", authorization))
            }
        }
    }

    /// The body: an upload task's own (the request's is ignored), else the request's data or stream.
    /// `countOfBytesExpectedToSend` follows from its length: the data, the file, or an explicit `Content-Length`.
    private static func makeBody(
        request: URLRequest,
        upload: UploadBody?,
        bodyState: BodyState,
        bodyStreams: any TaskHost
    ) throws(TransferError) -> TransportRequestBody {
        // Digits only: a length the app wrote with a sign ("-5", "+5") is no length, and the body goes chunked.
        let declaredLength = request.value(forHTTPHeaderField: "Content-Length").flatMap(ContentLengthValue.parse)
        if let upload {
            switch upload {
            case .data(let data):
                return data.isEmpty ? .none : .bytes(ByteBuffer(bytes: data))
            case .file(let url):
                let length = try FileBodySource.length(of: url)
                return .stream(length: length, source: FileBodySource(url: url))
            case .streamed:
                return .stream(
                    length: declaredLength,
                    source: InputStreamBodySource(
                        initialStream: nil, newStream: { await bodyStreams.askForNewBodyStream() }))
            }
        }
        if let data = request.httpBody {
            return data.isEmpty ? .none : .bytes(ByteBuffer(bytes: data))
        }
        if let stream = request.httpBodyStream {
            let initial = bodyState.sentBefore ? nil : stream
            return .stream(
                length: declaredLength,
                source: InputStreamBodySource(
                    initialStream: initial, newStream: { await bodyStreams.askForNewBodyStream() }))
        }
        return .none
    }

    /// Darwin uses the request's `timeoutInterval` when the app changed it from the default (60 s), else the
    /// session's `timeoutIntervalForRequest`.
    static func effectiveTimeout(request: URLRequest, sessionTimeout: TimeInterval) -> TimeInterval {
        request.timeoutInterval != 60 ? request.timeoutInterval : sessionTimeout
    }

    static func tlsSettings(_ configuration: URLSessionConfiguration) -> TLSSettings {
        var settings = TLSSettings(
            minimumVersion: tlsVersion(configuration.tlsMinimumSupportedProtocolVersion) ?? .tlsv12,
            maximumVersion: tlsVersion(configuration.tlsMaximumSupportedProtocolVersion) ?? .tlsv13,
            additionalTrustedCertificatesDER: configuration.courierAdditionalTrustedCertificates.map { [UInt8]($0) }
        )
        if !configuration.courierAllowsHTTP2 { settings.applicationProtocols = .http1 }
        return settings
    }

    private static func tlsVersion(_ version: tls_protocol_version_t) -> TLSVersion? {
        switch version {
        case .TLSv10: return .tlsv1
        case .TLSv11: return .tlsv11
        case .TLSv12: return .tlsv12
        case .TLSv13: return .tlsv13
        default: return nil
        }
    }
}
