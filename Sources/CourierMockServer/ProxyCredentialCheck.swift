import Foundation
import NIOHTTP1

/// The `Proxy-Authorization` check of a ``MockProxy`` that requires Basic credentials (RFC 7617).
struct ProxyCredentialCheck: Sendable {
    let user: String
    let password: String
    let realm: String

    /// Whether `headers` carry `Proxy-Authorization: Basic base64(user:password)`; the scheme name is
    /// case-insensitive, and the credentials are compared after decoding so that base64 padding variants pass.
    func accepts(_ headers: HTTPHeaders) -> Bool {
        guard let value = headers.first(name: "Proxy-Authorization") else { return false }
        let trimmed = value.trimmingSpaces()
        guard let space = trimmed.firstIndex(of: " "), trimmed[..<space].lowercased() == "basic" else {
            return false
        }
        let token = trimmed[space...].trimmingSpaces()
        guard let decoded = Data(base64Encoded: token) else { return false }
        return Array(decoded) == Array("\(user):\(password)".utf8)
    }

    /// The `Proxy-Authenticate` value, with the realm as a quoted string.
    var challenge: String {
        let quoted = realm.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
        return "Basic realm=\"\(quoted)\""
    }
}
