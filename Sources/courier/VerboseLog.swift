import Courier
import CourierHTTP
import Foundation
import NIOConcurrencyHelpers

/// `-v`: each exchange of a transfer — request head, response head, the connection, TLS and the server's
/// certificate, timings — on standard error when the transfer's metrics arrive. Credentials are masked: a verbose
/// log gets pasted into bug reports.
final class VerboseLog: Sendable {
    private let board: ProgressBoard
    /// The subject of each host's certificate, from the server-trust challenge.
    private let certificateSubjects = NIOLockedValueBox<[String: String]>([:])
    /// The challenges the command answered (`-u`, `--proxy-user`): the field the session then adds (`Authorization`
    /// or `Proxy-Authorization`) and its scheme. The metrics show requests without a credential the session added,
    /// as `currentRequest` does, so the log adds the field back, masked, to the requests after the challenge.
    private let answeredFields = NIOLockedValueBox<[String: String]>([:])

    init(board: ProgressBoard) {
        self.board = board
    }

    /// Notes the certificate `host` presented.
    func noteCertificate(subject: String, host: String) {
        certificateSubjects.withLockedValue { $0[host] = subject }
    }

    /// Notes that the command answered a challenge of `scheme` (`NSURLAuthenticationMethodHTTPBasic`, …) for a
    /// proxy or the origin.
    func noteAnswered(scheme: String, proxy: Bool) {
        let name = scheme == NSURLAuthenticationMethodHTTPDigest ? "Digest" : "Basic"
        answeredFields.withLockedValue { $0[proxy ? "Proxy-Authorization" : "Authorization"] = name }
    }

    func log(_ metrics: URLSessionTaskMetrics) {
        var lines: [String] = []
        let answered = answeredFields.withLockedValue { $0 }
        // The fields a challenge met so far asks for: 401 → Authorization (same origin only), 407 → the proxy's.
        var challenged: [String: URL] = [:]
        for transaction in metrics.transactionMetrics {
            let request = transaction.request
            let host = request.url?.host ?? ""
            if let address = transaction.remoteAddress {
                let port = transaction.remotePort.map { " port \($0)" } ?? ""
                let reuse = transaction.isReusedConnection ? "Re-using connection to" : "Connected to"
                lines.append("* \(reuse) \(host) (\(address))\(port)")
            }
            if let version = transaction.negotiatedTLSProtocolVersion {
                lines.append("* TLS: \(Self.name(of: version)), ALPN \(transaction.networkProtocolName ?? "none")")
                if let subject = certificateSubjects.withLockedValue({ $0[host] }) {
                    lines.append("* Server certificate: \(subject)")
                }
            }
            let target = request.url.map { url -> String in
                let path = url.path.isEmpty ? "/" : url.path
                return path + (url.query.map { "?\($0)" } ?? "")
            }
            lines.append(
                "> \(request.httpMethod ?? "GET") \(target ?? "/") \(Self.label(transaction.networkProtocolName))")
            var fields = request.allHTTPHeaderFields ?? [:]
            if !fields.keys.contains(where: { $0.lowercased() == "host" }), let url = request.url, let host = url.host {
                fields["Host"] = url.port.map { "\(host):\($0)" } ?? host
            }
            for (name, origin) in challenged where fields[name] == nil {
                guard let scheme = answered[name], let url = request.url,
                    name == "Proxy-Authorization" || RedirectPolicy.isSameOrigin(url, origin)
                else { continue }
                fields[name] = "\(scheme) credential"
            }
            for (name, value) in fields.sorted(by: { $0.key < $1.key }) {
                lines.append("> \(name): \(Self.mask(name: name, value: value))")
            }
            lines.append(">")
            if let response = transaction.response as? HTTPURLResponse {
                if let url = request.url, response.statusCode == 401 || response.statusCode == 407 {
                    challenged[response.statusCode == 401 ? "Authorization" : "Proxy-Authorization"] = url
                }
                lines.append("< \(Self.label(transaction.networkProtocolName)) \(response.statusCode)")
                for (name, value) in response.allHeaderFields.sorted(by: { "\($0.key)" < "\($1.key)" }) {
                    lines.append("< \(name): \(Self.mask(name: "\(name)", value: "\(value)"))")
                }
                lines.append("<")
            }
            lines.append("* " + Self.timings(transaction))
        }
        lines.append(
            String(format: "* Total: %.3f s, %d redirect(s)", metrics.taskInterval.duration, metrics.redirectCount))
        board.message(lines.joined(separator: "\n"))
    }

    private static func timings(_ transaction: URLSessionTaskTransactionMetrics) -> String {
        guard let start = transaction.fetchStartDate else { return "Timings: none" }
        func at(_ date: Date?) -> String {
            date.map { String(format: "%.1f ms", $0.timeIntervalSince(start) * 1000) } ?? "-"
        }
        return
            "Timings from fetch start: DNS \(at(transaction.domainLookupEndDate)), connect \(at(transaction.connectEndDate)), TLS \(at(transaction.secureConnectionEndDate)), first byte \(at(transaction.responseStartDate)), end \(at(transaction.responseEndDate))"
    }

    private static func label(_ protocolName: String?) -> String {
        switch protocolName?.lowercased() {
        case "h2": "HTTP/2"
        case "http/1.0": "HTTP/1.0"
        default: "HTTP/1.1"
        }
    }

    private static func name(of version: tls_protocol_version_t) -> String {
        switch version {
        case .TLSv13: "TLSv1.3"
        case .TLSv12: "TLSv1.2"
        case .TLSv11: "TLSv1.1"
        case .TLSv10: "TLSv1.0"
        default: "TLS"
        }
    }

    /// Credentials shown as their scheme only; cookies as their names. A credential with no scheme before it (an API
    /// key sent as the whole `Authorization` value) and a cookie with no name (`Set-Cookie: token`, which browsers
    /// keep as a value with an empty name) are all secret.
    static func mask(name: String, value: String) -> String {
        switch name.lowercased() {
        case "authorization", "proxy-authorization":
            let parts = value.split(separator: " ", maxSplits: 1)
            return parts.count == 2 ? "\(parts[0]) [masked]" : "[masked]"
        case "cookie", "set-cookie":
            let pairs = value.split(separator: ";").map { pair -> String in
                guard let equals = pair.firstIndex(of: "=") else { return "[masked]" }
                return "\(pair[..<equals].trimmingCharacters(in: .whitespaces))=[masked]"
            }
            return name.lowercased() == "cookie" ? pairs.joined(separator: "; ") : (pairs.first ?? "[masked]")
        default:
            return value
        }
    }
}
