import CourierHTTP
import Foundation

extension URLSessionConfiguration {
    /// ``httpAdditionalHeaders`` as name–value pairs, sorted by lowercased name for a deterministic order: the one
    /// reading of them, for the session's requests and for the tasks a background session hands to courierd.
    ///
    /// Keys must be strings (other entries are ignored). A value that is not a string (an `NSNumber`, an `Int`) is
    /// sent as its description, as Darwin sends it; a `Bool` as `1` or `0`, as Darwin sends the `NSNumber` it
    /// bridges to (not `true` or `false`, its Swift description).
    package var additionalHeaderPairs: [(String, String)] {
        guard let headers = httpAdditionalHeaders else { return [] }
        let pairs: [(String, String)] = headers.compactMap { key, value in
            guard let name = key.base as? String else { return nil }
            switch value {
            case let text as String: return (name, text)
            // A boolean NSNumber casts to `Bool` too; so may an NSNumber equal to 0 or 1, which Darwin describes
            // as `0` or `1` as well.
            case let flag as Bool: return (name, flag ? "1" : "0")
            default: return (name, String(describing: value))
            }
        }
        return pairs.sorted { HeaderName.canonical($0.0) < HeaderName.canonical($1.0) }
    }
}
