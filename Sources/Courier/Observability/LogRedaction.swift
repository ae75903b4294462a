import CourierHTTP
import Foundation

/// What log lines may show of requests and responses: never a credential. Header fields that carry secrets keep
/// their names with the value replaced, and URLs lose their user and password (see
/// `URL.textWithoutCredentials(marking:)`).
enum LogRedaction {
    /// The fields whose values are secrets.
    static let secretFields = ["Authorization", "Proxy-Authorization", "Cookie", "Set-Cookie"]

    /// `url` for a log line: user and password replaced by `REDACTED`, `-` for none.
    static func url(_ url: URL?) -> String {
        url?.textWithoutCredentials(marking: URL.redactedCredentialMarker) ?? "-"
    }

    /// A head for a `trace` line: the start line and one `name: value` per field, secrets redacted.
    static func head(_ startLine: String, fields: [(String, String)]) -> String {
        var lines = [startLine]
        for (name, value) in fields {
            let secret = secretFields.contains { HeaderName.equal($0, name) }
            lines.append("\(name): \(secret ? "<redacted>" : value)")
        }
        return lines.joined(separator: "\n")
    }
}
