/// Merging of a session's `httpAdditionalHeaders` into a request's own header fields.
public enum AdditionalHeaderMerge {
    /// The header names a session's additional headers may not set, because the URL Loading System manages them
    /// itself (Apple lists these as ones not to set in `URLSessionConfiguration.httpAdditionalHeaders`).
    ///
    /// `Authorization`, on Apple's list too, is not among them: Darwin sends it (a bearer token for every request of
    /// a session is a common use, and Alamofire's tests rely on it), as FoundationNetworking does. The request's own
    /// value wins, a credential that answers a challenge replaces it, and it never follows a redirect to another
    /// origin (see ``merge(additional:into:excluding:)``).
    public static let reservedNames: [String] = [
        "Connection", "Host", "Proxy-Authenticate", "Proxy-Authorization", "WWW-Authenticate",
    ]

    /// Returns the request's header fields completed with the session's additional headers.
    ///
    /// An additional header is added only when the request has no field of that name (compared case-insensitively):
    /// the request's own values always win. Reserved names (``reservedNames``) are dropped. Added fields come after
    /// the request's own, in the order given.
    ///
    /// - Parameters:
    ///   - additional: The session's additional header fields.
    ///   - request: The request's header fields.
    ///   - excluded: Names not to add either (compared case-insensitively): the credential fields on a redirect's
    ///     request, which the redirect kept or removed for its origin.
    /// - Returns: The merged header fields.
    public static func merge(
        additional: [(String, String)], into request: HeaderFieldDictionary, excluding excluded: [String] = []
    ) -> HeaderFieldDictionary {
        var merged = request
        for (name, value) in additional
        where !isReserved(name) && !merged.contains(name) && !excluded.contains(where: { HeaderName.equal($0, name) }) {
            merged[name] = value
        }
        return merged
    }

    /// Whether a header name is reserved for the URL Loading System.
    ///
    /// - Parameter name: A header field name, compared case-insensitively.
    public static func isReserved(_ name: String) -> Bool {
        reservedNames.contains { HeaderName.equal($0, name) }
    }
}
