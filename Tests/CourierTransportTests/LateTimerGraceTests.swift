import NIOCore
import Testing

@testable import CourierTransport

@Suite("LateTimerGrace")
struct LateTimerGraceTests {
    /// A timer up to 20 ms late times out at once; later than that, the loop gets its extra turn first.
    @Test(arguments: [(0, false), (20, false), (21, true), (5_000, true)])
    func lateness(milliseconds: Int64, late: Bool) {
        let deadline = NIODeadline.uptimeNanoseconds(1_000_000_000)
        #expect(LateTimerGrace.firedLate(deadline, now: deadline + .milliseconds(milliseconds)) == late)
    }
}
