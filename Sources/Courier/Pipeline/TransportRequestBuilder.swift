import CourierHTTP
import CourierTransport
import Foundation
import NIOCore
import NIOSSL

/// Turns a prepared `URLRequest` into the transport's request: method, header fields, body, timeouts, TLS.
enum TransportRequestBuilder {
    static func make(
        from request: URLRequest,
        configuration: URLSessionConfiguration
    ) throws(TransferError) -> TransportRequest {
        guard let url = request.url else { throw .badURL("the request has no URL") }
        let method = request.httpMethod ?? "GET"
        guard !method.isEmpty, method.allSatisfy({ $0.isLetter || $0 == "-" || $0 == "_" }) else {
            throw .badURL("the method \(method) is not a valid HTTP method")
        }
        let headers = (request.allHTTPHeaderFields ?? [:]).sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        for (name, value) in headers where name.contains(where: \.isNewline) || value.contains(where: \.isNewline) {
            throw .badURL("the header field \(name) contains a line break")
        }
        let body: TransportRequestBody
        if let data = request.httpBody {
            body = data.isEmpty ? .none : .bytes(ByteBuffer(bytes: data))
        } else if request.httpBodyStream != nil {
            throw .unsupportedURL("httpBodyStream is not supported yet; set httpBody or use an upload task")
        } else {
            body = .none
        }
        return try TransportRequest(
            method: method,
            url: url,
            headers: headers,
            body: body,
            idleTimeout: TaskRunner.timeAmount(effectiveTimeout(request: request, configuration: configuration)),
            tls: tlsSettings(configuration)
        )
    }

    /// Darwin uses the request's `timeoutInterval` when the app changed it from the default (60 s), else the
    /// session's `timeoutIntervalForRequest`.
    static func effectiveTimeout(request: URLRequest, configuration: URLSessionConfiguration) -> TimeInterval {
        request.timeoutInterval != 60 ? request.timeoutInterval : configuration.timeoutIntervalForRequest
    }

    static func tlsSettings(_ configuration: URLSessionConfiguration) -> TLSSettings {
        TLSSettings(
            minimumVersion: tlsVersion(configuration.tlsMinimumSupportedProtocolVersion) ?? .tlsv12,
            maximumVersion: tlsVersion(configuration.tlsMaximumSupportedProtocolVersion) ?? .tlsv13,
            additionalTrustedCertificatesDER: configuration.courierAdditionalTrustedCertificates.map { [UInt8]($0) }
        )
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
