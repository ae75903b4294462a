import Courier
import Foundation

/// What `-w`/`--write-out` and the summary can tell about one finished transfer, taken from the task's
/// `URLSessionTaskMetrics` and its response.
struct TransferReport: Sendable {
    var effectiveURL: String = ""
    var httpCode: Int = 0
    var contentType: String = ""
    /// Body bytes written (after decoding), over every attempt that counted: a resumed download counts the bytes
    /// of this run.
    var sizeDownload: Int64 = 0
    var sizeUpload: Int64 = 0
    var timeTotal: Double = 0
    var timeNameLookup: Double = 0
    var timeConnect: Double = 0
    var timeAppConnect: Double = 0
    var timeStartTransfer: Double = 0
    var httpVersion: String = "0"
    var numRedirects: Int = 0
    var numConnects: Int = 0
    var remoteIP: String = ""
    var remotePort: Int = 0
    var exitCode: Int32 = 0
    var errorMessage: String = ""
    var fileName: String = ""

    var speedDownload: Double { timeTotal > 0 ? Double(sizeDownload) / timeTotal : 0 }

    /// Fills the timing and protocol fields from `metrics`: times are seconds from the start of the task to the
    /// moment the last transaction reached each step, as curl reports them. (``timeTotal`` is the tool's own
    /// clock, from the first attempt to the end as the tool saw it: with `--limit-rate` or retries the network may
    /// be done long before.)
    mutating func take(_ metrics: URLSessionTaskMetrics) {
        let start = metrics.taskInterval.start
        numRedirects = metrics.redirectCount
        numConnects = metrics.transactionMetrics.filter { !$0.isReusedConnection && $0.connectStartDate != nil }.count
        guard let last = metrics.transactionMetrics.last else { return }
        func since(_ date: Date?) -> Double { date.map { max(0, $0.timeIntervalSince(start)) } ?? 0 }
        timeNameLookup = since(last.domainLookupEndDate)
        timeConnect = since(last.connectEndDate ?? last.secureConnectionStartDate)
        timeAppConnect = since(last.secureConnectionEndDate)
        timeStartTransfer = since(last.responseStartDate)
        httpVersion = Self.version(last.networkProtocolName)
        remoteIP = last.remoteAddress ?? ""
        remotePort = last.remotePort ?? 0
    }

    /// curl's `%{http_version}` from an ALPN name.
    static func version(_ protocolName: String?) -> String {
        switch protocolName?.lowercased() {
        case "h2": "2"
        case "http/1.0": "1.0"
        case "http/1.1": "1.1"
        case "h3": "3"
        default: "0"
        }
    }

    /// The value of `%{name}`, or `nil` for a name `-w` does not know.
    func value(of name: String) -> String? {
        func seconds(_ value: Double) -> String { String(format: "%.6f", value) }
        switch name {
        case "http_code", "response_code": return String(format: "%03d", httpCode)
        case "size_download": return "\(sizeDownload)"
        case "size_upload": return "\(sizeUpload)"
        case "time_total": return seconds(timeTotal)
        case "time_namelookup": return seconds(timeNameLookup)
        case "time_connect": return seconds(timeConnect)
        case "time_appconnect": return seconds(timeAppConnect)
        case "time_starttransfer": return seconds(timeStartTransfer)
        case "speed_download": return String(format: "%.0f", speedDownload)
        case "http_version": return httpVersion
        case "num_redirects": return "\(numRedirects)"
        case "num_connects": return "\(numConnects)"
        case "url_effective": return effectiveURL
        case "content_type": return contentType
        case "remote_ip": return remoteIP
        case "remote_port": return "\(remotePort)"
        case "exitcode": return "\(exitCode)"
        case "errormsg": return errorMessage
        case "filename_effective": return fileName
        default: return nil
        }
    }

    /// The variables `-w` knows, for the help text.
    static let variables = [
        "http_code", "response_code", "size_download", "size_upload", "time_total", "time_namelookup", "time_connect",
        "time_appconnect", "time_starttransfer", "speed_download", "http_version", "num_redirects", "num_connects",
        "url_effective", "content_type", "remote_ip", "remote_port", "exitcode", "errormsg", "filename_effective",
    ]
}

/// `-w`/`--write-out`: a template with `%{variable}`s, `%%`, and the escapes `\n`, `\r`, `\t` and `\\`.
enum WriteOut {
    /// The template filled in from `report`; an unknown variable is left out and named in `unknown`.
    static func expand(_ template: String, report: TransferReport) -> (text: String, unknown: [String]) {
        var output = ""
        var unknown: [String] = []
        var characters = template[...]
        while let character = characters.popFirst() {
            switch character {
            case "%":
                if characters.first == "%" {
                    characters.removeFirst()
                    output.append("%")
                } else if characters.first == "{", let close = characters.firstIndex(of: "}") {
                    let name = String(characters[characters.index(after: characters.startIndex)..<close])
                    characters = characters[characters.index(after: close)...]
                    if let value = report.value(of: name) {
                        output += value
                    } else {
                        unknown.append(name)
                    }
                } else {
                    output.append("%")
                }
            case "\\":
                switch characters.first {
                case "n": output.append("\n")
                case "r": output.append("\r")
                case "t": output.append("\t")
                case "\\": output.append("\\")
                default:
                    output.append("\\")
                    continue
                }
                characters.removeFirst()
            default:
                output.append(character)
            }
        }
        return (output, unknown)
    }
}
