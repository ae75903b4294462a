import Foundation

extension URL {
    /// The URL's scheme in lower case (schemes are case-insensitive, RFC 3986 §3.1), or `nil` when it has none.
    ///
    /// Asked for every request by several stages: `http` and `https`, as nearly every URL spells them, are returned
    /// as they are, without a lowercased copy.
    package var lowercasedScheme: String? {
        guard let scheme else { return nil }
        return scheme == "http" || scheme == "https" ? scheme : scheme.lowercased()
    }
}
