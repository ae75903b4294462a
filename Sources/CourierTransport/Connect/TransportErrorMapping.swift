import CourierHTTP
import NIOCore
import NIOHTTP2
import NIOPosix
import NIOSSL

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Turns the errors SwiftNIO and NIOSSL raise into ``TransferError``s with the code Darwin would report.
enum TransportErrorMapping {
    /// An error met while connecting (DNS, TCP, TLS handshake).
    static func connectError(_ error: any Error, endpoint: Endpoint) -> TransferError {
        if let transfer = error as? TransferError { return transfer }
        if let connection = error as? NIOConnectionError {
            if connection.connectionErrors.isEmpty {
                return .cannotFindHost("cannot resolve \(endpoint.host)")
            }
            if let first = connection.connectionErrors.first {
                return connectError(first.error, endpoint: endpoint)
            }
        }
        if let channelError = error as? ChannelError {
            switch channelError {
            case .connectTimeout: return .timedOut("connecting to \(endpoint) timed out")
            case .eof, .ioOnClosedChannel, .alreadyClosed, .outputClosed, .inputClosed:
                return .networkConnectionLost("the connection to \(endpoint) closed during set-up")
            default: break
            }
        }
        if error is SocketAddressError {
            return .cannotFindHost("cannot resolve \(endpoint.host)")
        }
        if let ioError = error as? IOError {
            switch ioError.errnoCode {
            case ENETUNREACH:
                return .notConnectedToInternet("no network reaches \(endpoint): \(ioError)")
            case EHOSTUNREACH:
                return .noRouteToHost("no route to \(endpoint): \(ioError)")
            case ENOENT where endpoint.unixSocketPath != nil:
                // The local daemon has not created its socket yet: the Unix-socket form of a missing network path.
                return .noRouteToHost("the socket \(endpoint.unixSocketPath ?? "") does not exist: \(ioError)")
            case ECONNREFUSED, EADDRNOTAVAIL:
                return .cannotConnectToHost("cannot connect to \(endpoint): \(ioError)")
            case ETIMEDOUT:
                return .timedOut("connecting to \(endpoint) timed out")
            default:
                return .cannotConnectToHost("cannot connect to \(endpoint): \(ioError)")
            }
        }
        if let tls = tlsError(error, endpoint: endpoint) { return tls }
        return .cannotConnectToHost("cannot connect to \(endpoint): \(error)")
    }

    /// An error met while a request is on the connection.
    static func exchangeError(_ error: any Error, endpoint: Endpoint) -> TransferError {
        if let transfer = error as? TransferError { return transfer }
        if error is ByteToMessageDecoderError {
            return .badServerResponse("malformed response from \(endpoint): \(error)")
        }
        if let closed = error as? NIOHTTP2Errors.StreamClosed {
            return .networkConnectionLost(
                "\(endpoint) reset the HTTP/2 stream (\(closed.errorCode)) before the response ended")
        }
        if error is any NIOHTTP2Error {
            // A frame or header block that breaks RFC 9113 (NIOHTTP2 validates them).
            return .badServerResponse("bad HTTP/2 response from \(endpoint): \(error)")
        }
        if let tls = tlsError(error, endpoint: endpoint) { return tls }
        if let channelError = error as? ChannelError, case .connectTimeout = channelError {
            return .timedOut("the request to \(endpoint) timed out")
        }
        return .networkConnectionLost("the connection to \(endpoint) failed: \(error)")
    }

    /// An HTTP/2 stream NIOHTTP2 reset itself because the server broke the protocol on it: a malformed response (RFC
    /// 9113 §8.1.1: a `content-length` its DATA frames contradict, a connection-specific or uppercase field name, no
    /// `:status`) or a flow-control violation. The stream sees only the reset, which ``exchangeError(_:endpoint:)``
    /// takes for the server's (a lost connection); the response is bad, and trying again would get the same.
    static func malformedStreamError(_ closed: NIOHTTP2Errors.StreamClosed, endpoint: Endpoint) -> TransferError {
        .badServerResponse(
            "the HTTP/2 response from \(endpoint) breaks the protocol; the stream was reset (\(closed.errorCode))")
    }

    /// An HTTP/2 connection NIOHTTP2 closed with `GOAWAY` for the server's protocol violation, `error` (a malformed
    /// frame, an oversized header list, a CONTINUATION or control-frame flood): the server's fault, as a malformed
    /// HTTP/1.1 response is, not a lost connection (which would be retried, by background sessions too).
    static func connectionViolationError(_ error: any Error, endpoint: Endpoint) -> TransferError {
        .badServerResponse("\(endpoint) broke the HTTP/2 protocol; the connection was closed: \(error)")
    }

    private static func tlsError(_ error: any Error, endpoint: Endpoint) -> TransferError? {
        if let extra = error as? NIOSSLExtraError, extra == .failedToValidateHostname {
            return .serverCertificateUntrusted("the certificate of \(endpoint) does not name \(endpoint.host)")
        }
        if let ssl = error as? NIOSSLError {
            let text = String(describing: ssl)
            if text.contains("CERTIFICATE_VERIFY_FAILED") || text.contains("certificate verify failed") {
                return .serverCertificateUntrusted("the certificate of \(endpoint) is not trusted: \(text)")
            }
            if let clientCertificate = clientCertificateError(alert: text, endpoint: endpoint) {
                return clientCertificate
            }
            return .secureConnectionFailed("TLS with \(endpoint) failed: \(text)")
        }
        if error is BoringSSLError {
            let text = String(describing: error)
            if let clientCertificate = clientCertificateError(alert: text, endpoint: endpoint) {
                return clientCertificate
            }
            return .secureConnectionFailed("TLS with \(endpoint) failed: \(text)")
        }
        return nil
    }

    /// A certificate alert the client receives speaks of the client's own certificate: the server names none of its
    /// own. TLS 1.3 servers say `certificate_required` when none came; the others say why they refused one.
    static func clientCertificateError(alert text: String, endpoint: Endpoint) -> TransferError? {
        if text.contains("ALERT_CERTIFICATE_REQUIRED") {
            return .clientCertificateRequired("\(endpoint) requires a client certificate: \(text)")
        }
        let refusals = [
            "ALERT_BAD_CERTIFICATE", "ALERT_UNKNOWN_CA", "ALERT_CERTIFICATE_UNKNOWN", "ALERT_CERTIFICATE_EXPIRED",
            "ALERT_CERTIFICATE_REVOKED", "ALERT_UNSUPPORTED_CERTIFICATE", "ALERT_ACCESS_DENIED",
        ]
        if refusals.contains(where: { text.contains($0) }) {
            return .clientCertificateRejected("\(endpoint) refused the client certificate: \(text)")
        }
        return nil
    }
}
