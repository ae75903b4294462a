import CourierHTTP
import Foundation
import Testing

@testable import Courier

/// A password in a request's URL reaches no text: not the error's description (which apps log), not log lines, not
/// telemetry. Every such text goes through `URL.textWithoutCredentials(marking:)`; the error's failing URL stays
/// the URL the app passed, as on Darwin.
@Suite("URL texts without credentials")
struct URLTextRedactionTests {
    @Test func anErrorTextLeavesThePasswordOut() async throws {
        // Nothing listens on the port, and nothing is tried: the cache-only policy fails before any connection.
        let url = try #require(URL(string: "http://alice:s3cret@127.0.0.1:9/doc?page=2"))
        let session = makeSession { $0.requestCachePolicy = .returnCacheDataDontLoad }
        defer { session.invalidateAndCancel() }
        let error = try #require(await session.runDataTask(url).urlError)
        #expect(error.code == .resourceUnavailable)
        #expect(!error.localizedDescription.contains("s3cret"))
        #expect(error.localizedDescription.contains("http://127.0.0.1:9/doc?page=2"))
        #expect(error.userInfo[NSURLErrorFailingURLErrorKey] as? URL == url)
    }

    /// Log lines and telemetry write a URL the same way: user and password replaced by `REDACTED`.
    @Test func theHelpersAgree() throws {
        let url = try #require(URL(string: "https://alice:s3cret@a.example:8443/p?q=1"))
        let expected = "https://REDACTED:REDACTED@a.example:8443/p?q=1"
        #expect(url.textWithoutCredentials(marking: URL.redactedCredentialMarker) == expected)
        #expect(LogRedaction.url(url) == expected)
        #expect(TaskTelemetry.redacted(url, keepsQuery: true) == expected)
        #expect(TaskTelemetry.redacted(url, keepsQuery: false) == "https://REDACTED:REDACTED@a.example:8443/p")
        #expect(LogRedaction.url(nil) == "-")
    }

    /// A task's description (what `print(task)` writes) names its URL without the password.
    @Test func aTaskDescriptionLeavesThePasswordOut() throws {
        let url = try #require(URL(string: "http://alice:s3cret@127.0.0.1:9/doc"))
        let session = makeSession()
        defer { session.invalidateAndCancel() }
        let task = session.dataTask(with: url)
        #expect(!task.description.contains("s3cret"))
        #expect(task.description.contains("http://127.0.0.1:9/doc"))
    }
}
