import CourierHTTP
import Foundation

/// What the HTTP cache keeps about a stored response beyond what `CachedURLResponse` shows: when it was requested
/// and received (for its age, RFC 9111 §4.2.3) and the request's values of the fields its `Vary` names (a stored
/// response answers only requests that agree on them, §4.1).
struct CacheMetadata: Codable, Sendable, Equatable {
    var requestTime: Date
    var responseTime: Date
    /// Lowercased field name → the request's value (`nil`: the request did not have the field).
    var varyingFields: [String: String?]

    /// The values `request` has for the fields `response`'s `Vary` names; `nil` when it has `Vary: *`, which no
    /// later request matches.
    static func varyingFields(of response: HTTPURLResponse, request: URLRequest) -> [String: String?]? {
        guard let vary = response.value(forHTTPHeaderField: "Vary") else { return [:] }
        var fields: [String: String?] = [:]
        for name in vary.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces).lowercased() })
        where !name.isEmpty {
            if name == "*" { return nil }
            fields[name] = request.value(forHTTPHeaderField: name)
        }
        return fields
    }

    /// Whether `request` agrees with the stored request on every varying field.
    func matches(_ request: URLRequest) -> Bool {
        varyingFields.allSatisfy { name, value in request.value(forHTTPHeaderField: name) == value }
    }

    /// The response as the cache rules see it.
    func storedResponse(of response: HTTPURLResponse) -> StoredResponse {
        StoredResponse(
            status: response.statusCode, headers: response.headerFields, requestTime: requestTime,
            responseTime: responseTime)
    }
}
