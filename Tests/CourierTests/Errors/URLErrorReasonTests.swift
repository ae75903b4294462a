import Foundation
import Testing

@testable import Courier

/// `URLError.backgroundTaskCancelledReason` and `networkUnavailableReason` read Darwin's `userInfo` keys, so that
/// Darwin code that reads them compiles and works on errors that carry them.
@Suite("URLError reasons")
struct URLErrorReasonTests {
    @Test func theReasonsAreReadFromTheirKeys() {
        let error = URLError(
            .cancelled,
            userInfo: [NSURLErrorBackgroundTaskCancelledReasonKey: 1, NSURLErrorNetworkUnavailableReasonKey: 2])
        #expect(error.backgroundTaskCancelledReason == .backgroundUpdatesDisabled)
        #expect(error.networkUnavailableReason == .constrained)
    }

    @Test func anErrorWithoutThemOrWithUnknownValuesHasNone() {
        #expect(URLError(.cancelled).backgroundTaskCancelledReason == nil)
        #expect(URLError(.notConnectedToInternet).networkUnavailableReason == nil)
        let unknown = URLError(
            .cancelled,
            userInfo: [NSURLErrorBackgroundTaskCancelledReasonKey: 7, NSURLErrorNetworkUnavailableReasonKey: "x"])
        #expect(unknown.backgroundTaskCancelledReason == nil)
        #expect(unknown.networkUnavailableReason == nil)
    }

    /// Courier declared `NSURLErrorFailingURLPeerTrustErrorKey` and `NSURLErrorBackgroundTaskCancelledReasonKey`
    /// beside Foundation's, which made every unqualified use of them ambiguous (a compile error) in a file that
    /// imports both modules, as this one does.
    @Test func foundationsKeysAreUsableWithCourierImported() {
        #expect(NSURLErrorFailingURLPeerTrustErrorKey == "NSURLErrorFailingURLPeerTrustErrorKey")
        #expect(NSURLErrorBackgroundTaskCancelledReasonKey == "NSURLErrorBackgroundTaskCancelledReasonKey")
    }

    @Test func theRawValuesAreDarwins() {
        #expect(URLError.BackgroundTaskCancelledReason.userForceQuitApplication.rawValue == 0)
        #expect(URLError.BackgroundTaskCancelledReason.insufficientSystemResources.rawValue == 2)
        #expect(URLError.NetworkUnavailableReason.cellular.rawValue == 0)
        #expect(URLError.NetworkUnavailableReason.expensive.rawValue == 1)
        #expect(NSURLErrorNetworkUnavailableReasonKey == "NSURLErrorNetworkUnavailableReasonKey")
    }
}
