import CourierHTTP
import Crypto
import Foundation

/// What the HTTP cache keeps about a stored response beyond what `CachedURLResponse` shows: when it was requested
/// and received (for its age, RFC 9111 §4.2.3) and the request's values of the fields its `Vary` names (a stored
/// response answers only requests that agree on them, §4.1).
struct CacheMetadata: Codable, Sendable, Equatable {
    var requestTime: Date
    var responseTime: Date
    /// Lowercased field name → the request's value (`nil`: the request did not have the field); for a secret field
    /// (``secretFields``), a digest of the value instead (see ``recorded(_:of:)``).
    var varyingFields: [String: String?]

    /// Fields whose values are secrets: a session cookie, a password. A response that varies on them (`Vary: Cookie`
    /// is common) must not carry them into `Cache.db`, where a session cookie or a `.forSession` credential would
    /// outlive the process.
    static let secretFields: Set<String> = ["cookie", "authorization", "proxy-authorization"]

    /// The key of the digests of secret fields: random per process and never stored, so that no value can be guessed
    /// back from the disk. A response stored by an earlier process with such a field then matches no request (it is
    /// fetched again), which a session cookie or a session credential could not have matched anyway.
    private static let secretKey = SymmetricKey(size: .bits256)

    /// The values `request` has for the fields `response`'s `Vary` names; `nil` when it has `Vary: *`, which no
    /// later request matches.
    static func varyingFields(of response: HTTPURLResponse, request: URLRequest) -> [String: String?]? {
        guard let vary = response.value(forHTTPHeaderField: "Vary") else { return [:] }
        var fields: [String: String?] = [:]
        for name in vary.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces).lowercased() })
        where !name.isEmpty {
            if name == "*" { return nil }
            fields[name] = recorded(request.value(forHTTPHeaderField: name), of: name)
        }
        return fields
    }

    /// What is kept of a request's value of the lowercased field `name`: the value itself, or for a secret field an
    /// HMAC-SHA256 of it under the process's key (two requests still compare equal exactly when their values do).
    static func recorded(_ value: String?, of name: String) -> String? {
        guard let value, secretFields.contains(name) else { return value }
        let code = HMAC<SHA256>.authenticationCode(for: Data(value.utf8), using: secretKey)
        return "hmac-sha256:" + Hex.lowercase(code)
    }

    /// Whether `request` agrees with the stored request on every varying field.
    func matches(_ request: URLRequest) -> Bool {
        varyingFields.allSatisfy { name, value in
            Self.recorded(request.value(forHTTPHeaderField: name), of: name) == value
        }
    }

    /// The response as the cache rules see it.
    func storedResponse(of response: HTTPURLResponse) -> StoredResponse {
        StoredResponse(
            status: response.statusCode, headers: response.headerFields, requestTime: requestTime,
            responseTime: responseTime)
    }
}
