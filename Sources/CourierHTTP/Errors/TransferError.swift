import Foundation

/// A failure of a transfer below the public API, before it is turned into a `URLError`.
///
/// The transport and the task engine speak this type; ``URLErrorMapping`` is the one place that turns it into
/// the `URLError` code Darwin would give. It is a struct around a private code so that new cases do not break
/// anyone who switches over it.
public struct TransferError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Code: Hashable, Sendable {
        case cancelled
        case badURL
        case unsupportedURL
        case cannotFindHost
        case cannotConnectToHost
        case timedOut
        case networkConnectionLost
        case badServerResponse
        case cannotParseResponse
        case secureConnectionFailed
        case serverCertificateUntrusted
        case serverCertificateHasBadDate
        case serverCertificateNotYetValid
        case serverCertificateHasUnknownRoot
        case clientCertificateRejected
        case clientCertificateRequired
        case cannotDecodeContentData
        case cannotCreateFile
        case cannotWriteToFile
        case cannotOpenFile
        case fileDoesNotExist
        case noPermissionsToReadFile
        case requestBodyStreamExhausted
        case cannotDecodeRawData
        case httpTooManyRedirects
        case resourceUnavailable
        case notConnectedToInternet
        /// Any other `URLError` code, carried by its raw value (a custom `URLProtocol`'s failure).
        case other(Int)
    }

    private let code: Code
    /// A human-readable explanation, used as the error's localized description.
    public let detail: String
    /// For a refused server certificate: the chain the server presented (DER, leaf first), which the task's
    /// `URLError` carries as `failureURLPeerTrust`, as on Darwin.
    public private(set) var peerCertificateChain: [[UInt8]]?
    /// Whether the connection could not be made for lack of a network path (no route, network unreachable, a local
    /// socket not there yet), rather than because the server refused: what `waitsForConnectivity` waits out.
    public private(set) var isLackOfConnectivity = false

    /// The error the task reports instead of the `URLError` of this error's code, when the failure came from the
    /// app's own code (a custom `URLProtocol`): Darwin delivers that error unchanged.
    public private(set) var reportedError: ReportedError?

    /// This error, reported to the app as `error` itself (see ``reportedError``).
    public func reporting(_ error: any Error) -> Self {
        var copy = self
        copy.reportedError = ReportedError(error)
        return copy
    }

    /// This error, carrying the server's certificate chain.
    public func withPeerCertificateChain(_ chain: [[UInt8]]) -> Self {
        var copy = self
        copy.peerCertificateChain = chain
        return copy
    }

    private init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    public var description: String { detail }

    /// The task was cancelled.
    public static func cancelled(_ detail: String = "cancelled") -> Self { .init(.cancelled, detail) }
    /// The URL is malformed.
    public static func badURL(_ detail: String) -> Self { .init(.badURL, detail) }
    /// The URL's scheme or a requested feature is not supported.
    public static func unsupportedURL(_ detail: String) -> Self { .init(.unsupportedURL, detail) }
    /// The host name could not be resolved.
    public static func cannotFindHost(_ detail: String) -> Self { .init(.cannotFindHost, detail) }
    /// The host refused or did not accept the connection.
    public static func cannotConnectToHost(_ detail: String) -> Self { .init(.cannotConnectToHost, detail) }
    /// No route leads to the host (or its local socket does not exist yet): `cannotConnectToHost`, and a lack of
    /// connectivity that `waitsForConnectivity` waits out.
    public static func noRouteToHost(_ detail: String) -> Self {
        var error = Self(.cannotConnectToHost, detail)
        error.isLackOfConnectivity = true
        return error
    }
    /// The network is unreachable: `notConnectedToInternet`, a lack of connectivity.
    public static func notConnectedToInternet(_ detail: String) -> Self {
        var error = Self(.notConnectedToInternet, detail)
        error.isLackOfConnectivity = true
        return error
    }
    /// A request or resource timeout fired.
    public static func timedOut(_ detail: String) -> Self { .init(.timedOut, detail) }
    /// The connection closed in the middle of a transfer.
    public static func networkConnectionLost(_ detail: String) -> Self { .init(.networkConnectionLost, detail) }
    /// The server's response was parsed but breaks the protocol (for example conflicting `Content-Length`
    /// values, or an invalid status code).
    public static func badServerResponse(_ detail: String) -> Self { .init(.badServerResponse, detail) }
    /// The server's response cannot be parsed as HTTP at all (a malformed status line or field syntax).
    public static func cannotParseResponse(_ detail: String) -> Self { .init(.cannotParseResponse, detail) }
    /// The TLS handshake failed for a reason other than trust.
    public static func secureConnectionFailed(_ detail: String) -> Self { .init(.secureConnectionFailed, detail) }
    /// The server's certificate chain was not trusted.
    public static func serverCertificateUntrusted(_ detail: String) -> Self {
        .init(.serverCertificateUntrusted, detail)
    }
    /// The server's certificate has expired (`URLError.serverCertificateHasBadDate`, −1201).
    public static func serverCertificateHasBadDate(_ detail: String) -> Self {
        .init(.serverCertificateHasBadDate, detail)
    }
    /// The server's certificate is not valid yet (`URLError.serverCertificateNotYetValid`, −1204).
    public static func serverCertificateNotYetValid(_ detail: String) -> Self {
        .init(.serverCertificateNotYetValid, detail)
    }
    /// The server's chain ends in a root nobody trusts (`URLError.serverCertificateHasUnknownRoot`, −1203).
    public static func serverCertificateHasUnknownRoot(_ detail: String) -> Self {
        .init(.serverCertificateHasUnknownRoot, detail)
    }
    /// The server refused the client certificate Courier presented (`URLError.clientCertificateRejected`, −1205).
    public static func clientCertificateRejected(_ detail: String) -> Self { .init(.clientCertificateRejected, detail) }
    /// The server requires a client certificate and none was presented (`URLError.clientCertificateRequired`,
    /// −1206).
    public static func clientCertificateRequired(_ detail: String) -> Self { .init(.clientCertificateRequired, detail) }
    /// The content coding of the body could not be decoded.
    public static func cannotDecodeContentData(_ detail: String) -> Self { .init(.cannotDecodeContentData, detail) }
    /// A file could not be created.
    public static func cannotCreateFile(_ detail: String) -> Self { .init(.cannotCreateFile, detail) }
    /// A file could not be written.
    public static func cannotWriteToFile(_ detail: String) -> Self { .init(.cannotWriteToFile, detail) }
    /// Data the caller handed in (for example download resume data) could not be decoded.
    public static func cannotDecodeRawData(_ detail: String) -> Self { .init(.cannotDecodeRawData, detail) }

    /// The request may only be answered from the cache, and the cache has nothing for it
    /// (`URLError.resourceUnavailable`, −1008).
    public static func resourceUnavailable(_ detail: String) -> Self { .init(.resourceUnavailable, detail) }

    /// A file could not be opened.
    public static func cannotOpenFile(_ detail: String) -> Self { .init(.cannotOpenFile, detail) }
    /// A file to upload does not exist.
    public static func fileDoesNotExist(_ detail: String) -> Self { .init(.fileDoesNotExist, detail) }
    /// A file to upload cannot be read.
    public static func noPermissionsToReadFile(_ detail: String) -> Self { .init(.noPermissionsToReadFile, detail) }
    /// A body stream was needed again and none was given.
    public static func requestBodyStreamExhausted(_ detail: String) -> Self {
        .init(.requestBodyStreamExhausted, detail)
    }
    /// Too many redirects.
    public static func httpTooManyRedirects(_ detail: String) -> Self { .init(.httpTooManyRedirects, detail) }

    /// A failure with any `URLError` code (a custom `URLProtocol` reports the code it likes).
    public static func urlError(_ code: URLError.Code, _ detail: String) -> Self {
        switch code {
        case .cancelled: return .cancelled(detail)
        case .badURL: return .badURL(detail)
        case .unsupportedURL: return .unsupportedURL(detail)
        case .timedOut: return .timedOut(detail)
        default: return .init(.other(code.rawValue), detail)
        }
    }

    /// Whether this is a cancellation.
    public var isCancellation: Bool { code == .cancelled }

    /// The `URLError` code Darwin gives for this failure.
    public var urlErrorCode: URLError.Code {
        switch code {
        case .cancelled: return .cancelled
        case .badURL: return .badURL
        case .unsupportedURL: return .unsupportedURL
        case .cannotFindHost: return .cannotFindHost
        case .cannotConnectToHost: return .cannotConnectToHost
        case .notConnectedToInternet: return .notConnectedToInternet
        case .timedOut: return .timedOut
        case .networkConnectionLost: return .networkConnectionLost
        case .badServerResponse: return .badServerResponse
        case .cannotParseResponse: return .cannotParseResponse
        case .secureConnectionFailed: return .secureConnectionFailed
        case .resourceUnavailable: return .resourceUnavailable
        case .serverCertificateUntrusted: return .serverCertificateUntrusted
        case .serverCertificateHasBadDate: return .serverCertificateHasBadDate
        case .serverCertificateNotYetValid: return .serverCertificateNotYetValid
        case .serverCertificateHasUnknownRoot: return .serverCertificateHasUnknownRoot
        case .clientCertificateRejected: return .clientCertificateRejected
        case .clientCertificateRequired: return .clientCertificateRequired
        case .cannotDecodeContentData: return .cannotDecodeContentData
        case .cannotCreateFile: return .cannotCreateFile
        case .cannotWriteToFile: return .cannotWriteToFile
        case .cannotOpenFile: return .cannotOpenFile
        case .fileDoesNotExist: return .fileDoesNotExist
        case .noPermissionsToReadFile: return .noPermissionsToReadFile
        case .requestBodyStreamExhausted: return .requestBodyStreamExhausted
        case .cannotDecodeRawData: return .cannotDecodeRawData
        case .httpTooManyRedirects: return .httpTooManyRedirects
        case .other(let raw): return URLError.Code(rawValue: raw) ?? .unknown
        }
    }
}
