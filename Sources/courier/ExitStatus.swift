import Courier
import Foundation

/// The exit statuses of `courier`: curl's numbers for the failures both tools can have, so scripts written for curl
/// keep working (`courier help get` lists them).
enum ExitStatus {
    static let success: Int32 = 0
    /// An unsupported URL scheme, or a failure without a closer status.
    static let other: Int32 = 1
    /// A usage error: an unknown option or options that cannot go together.
    static let usage: Int32 = 2
    static let malformedURL: Int32 = 3
    static let cannotResolveHost: Int32 = 6
    static let cannotConnect: Int32 = 7
    static let weirdServerReply: Int32 = 8
    /// `-f`/`--fail` and the server answered 400 or above.
    static let httpError: Int32 = 22
    static let writeError: Int32 = 23
    static let timedOut: Int32 = 28
    static let tlsHandshakeFailed: Int32 = 35
    static let cancelled: Int32 = 42
    static let tooManyRedirects: Int32 = 47
    static let emptyReply: Int32 = 52
    static let receiveFailure: Int32 = 56
    static let clientCertificate: Int32 = 58
    static let untrustedCertificate: Int32 = 60
    static let badContentEncoding: Int32 = 61
    static let loginDenied: Int32 = 67
    static let caCertificateUnreadable: Int32 = 77
    static let pinnedKeyMismatch: Int32 = 90

    /// The status for a task that failed with `error`.
    static func forError(_ error: URLError) -> Int32 {
        switch error.code {
        case .unsupportedURL: return other
        case .badURL: return malformedURL
        case .cannotFindHost, .dnsLookupFailed: return cannotResolveHost
        case .cannotConnectToHost, .notConnectedToInternet: return cannotConnect
        case .badServerResponse: return weirdServerReply
        case .timedOut: return timedOut
        case .secureConnectionFailed: return tlsHandshakeFailed
        case .serverCertificateUntrusted, .serverCertificateHasBadDate, .serverCertificateHasUnknownRoot,
            .serverCertificateNotYetValid:
            return untrustedCertificate
        case .clientCertificateRejected, .clientCertificateRequired: return clientCertificate
        case .cancelled: return cancelled
        case .httpTooManyRedirects, .redirectToNonExistentLocation: return tooManyRedirects
        case .zeroByteResource: return emptyReply
        case .networkConnectionLost: return receiveFailure
        case .cannotDecodeContentData, .cannotDecodeRawData, .cannotParseResponse: return badContentEncoding
        case .cannotCreateFile, .cannotOpenFile, .cannotWriteToFile, .cannotMoveFile, .cannotRemoveFile,
            .cannotCloseFile:
            return writeError
        case .userAuthenticationRequired, .userCancelledAuthentication: return loginDenied
        default: return other
        }
    }

    /// The table `courier help` prints.
    static let documentation = """
        EXIT STATUS
          0   success (with -f: and the server answered below 400)
          1   unsupported URL scheme, or a failure without a closer status
          2   usage error: unknown option, or options that cannot go together
          3   malformed URL
          5   the --proxy URL cannot be used (not http:// or socks5://, or no host)
          6   could not resolve the host name
          7   could not connect to the host
          8   the server's reply could not be parsed
          22  -f/--fail and the server answered 400 or above
          23  the output file could not be written
          26  the -d @file body could not be read
          28  timed out (--max-time, --connect-timeout, or the server stopped sending)
          35  the TLS handshake failed
          42  the transfer was cancelled
          47  more redirects than --max-redirs (at most 20, URLSession's limit)
          52  the server closed the connection without a reply
          56  the connection broke while receiving
          58  the client certificate was refused or required
          60  the server's certificate is not trusted (see --cacert, -k)
          61  the body could not be decoded (content encoding)
          67  the server refused the credentials
          77  the --cacert file could not be read
          90  the server's public key matches no --pin
          130, 143, 129  interrupted by SIGINT, SIGTERM, SIGHUP (128 + the signal)
        With several URLs, the status is that of the first URL that failed.
        """
}
