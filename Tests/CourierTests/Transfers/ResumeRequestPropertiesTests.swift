import CourierHTTP
import Foundation
import Testing

@testable import Courier

/// What resume data keeps of a download's request besides its URL, method, header fields and timeout.
@Suite("Resume data: request properties")
struct ResumeRequestPropertiesTests {
    /// A download whose request does not handle cookies (`httpShouldHandleCookies = false`: no `Cookie` from the
    /// session's storage, no `Set-Cookie` stored) resumes with a request that does not either, as Darwin's archived
    /// `NSURLRequest` keeps the property. It came back `true`, and the resumed request sent the storage's cookies to
    /// the host the app kept them from.
    @Test(arguments: [false, true])
    func theRequestsCookieHandlingSurvivesResumeData(handlesCookies: Bool) throws {
        let url = try #require(URL(string: "https://cdn.example/file.bin"))
        var request = URLRequest(url: url)
        request.httpShouldHandleCookies = handlesCookies
        let stored = try DownloadResumeState.stored(request, fallbackURL: url)
        let data = try ResumeData(
            downloadURL: url, bytesReceived: 42, entityTag: "\"v1\"", serverDownloadDate: nil,
            tempFileName: "CFNetworkDownload_1.tmp", originalRequest: stored, currentRequest: stored
        ).encoded()
        let state = DownloadResumeState.decode(data)
        #expect(state.error == nil)
        #expect(state.request?.httpShouldHandleCookies == handlesCookies)
        #expect(state.originalRequest?.httpShouldHandleCookies == handlesCookies)
        // Resume data of a request that handles cookies is unchanged: no new key (older readers see the same data).
        let plist = try #require(try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any])
        let current = try #require(plist["NSURLSessionResumeCurrentRequest"] as? [String: Any])
        #expect((current["httpShouldHandleCookies"] as? Bool) == (handlesCookies ? nil : false))
    }
}
