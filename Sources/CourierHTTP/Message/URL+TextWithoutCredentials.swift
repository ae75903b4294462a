import Foundation

extension URL {
    /// The marker OpenTelemetry's `url.full` puts in place of a user and a password.
    package static let redactedCredentialMarker = "REDACTED"

    /// The URL as text for people and tools to read — error descriptions, log lines, telemetry, the CLI's messages:
    /// its `absoluteString` without the user and password of its user info (`https://user:secret@host/` gives
    /// `https://host/`), or with each replaced by `marker` when one is given. The one rule for every such text, so a
    /// password in a URL reaches none of them. (A `URLError`'s `NSURLErrorFailingURLErrorKey` and `failingURL` keep
    /// the URL itself, as on Darwin: they are values for the app, not text.)
    package func textWithoutCredentials(marking marker: String? = nil) -> String {
        guard user != nil || password != nil else { return absoluteString }
        guard var components = URLComponents(url: self, resolvingAgainstBaseURL: true) else {
            // Not expected for a URL with user info; never fall back to the text that holds the password.
            return "(a URL with credentials)"
        }
        if components.user != nil { components.user = marker }
        if components.password != nil { components.password = marker }
        return components.string ?? "(a URL with credentials)"
    }
}
