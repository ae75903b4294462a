import Courier
import Foundation
import NIOConcurrencyHelpers
import Testing

/// A protocol whose `canInit` takes a while, so that a test can cancel its task while the lookup is asking it.
final class SlowClaimProtocol: URLProtocol, @unchecked Sendable {
    /// `canInit` calls begun and ended.
    static let asked = NIOLockedValueBox(0)
    static let answered = NIOLockedValueBox(0)

    override class func canInit(with request: URLRequest) -> Bool {
        guard request.url?.host == "slow-claim.test" else { return false }
        asked.withLockedValue { $0 += 1 }
        Thread.sleep(forTimeInterval: 0.2)
        answered.withLockedValue { $0 += 1 }
        return true
    }

    override func startLoading() {}

    override func stopLoading() {}
}

/// A task cancelled while the protocol lookup asks `canInit` ends without loading; the load the lookup then made for
/// it must not keep a thread. (Each such load started its protocol thread when it was made, and only a started load
/// ever stopped it: every cancellation during a lookup left a thread with a running run loop for good.)
@Suite("A load cancelled during the protocol lookup", .serialized)
struct CancelledLookupProtocolTests {
    @Test func aTaskCancelledWhileCanInitRunsLeavesNoThreadBehind() async throws {
        let session = makeSession { $0.protocolClasses = [SlowClaimProtocol.self] }
        defer { session.invalidateAndCancel() }
        let before = StubProtocol.threadCount()
        let loads = 5
        for index in 0..<loads {
            let asked = SlowClaimProtocol.asked.withLockedValue { $0 }
            let task = session.dataTask(with: URL(string: "https://slow-claim.test/\(index)")!)
            task.resume()
            try await waitUntil { SlowClaimProtocol.asked.withLockedValue { $0 } > asked }
            task.cancel()
            try await waitUntil { task.state == .completed }
            #expect((task.error as? URLError)?.code == .cancelled)
            // The lookup answers after the task ended.
            try await waitUntil { SlowClaimProtocol.answered.withLockedValue { $0 } > asked }
        }
        // Other suites' loads come and go: allow a few, and give ending threads a moment.
        let after = try await StubProtocol.threadCount(settlingAtMost: before + 2, polls: 20)
        #expect(after <= before + 2, "\(after - before) more protocol threads after \(loads) cancelled lookups")
    }
}
