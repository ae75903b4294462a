import NIOCore
import Testing

@testable import Courier

/// The `earliestBeginDate` timer's delay: the date may pass between `begin` finding it in the future and the timer
/// being armed, and a delay of zero or less must then fire at once, not read as "no limit".
@Suite("Begin timer delay")
struct BeginTimerDelayTests {
    @Test(arguments: [0, -0.000_001, -5, -.infinity, .nan] as [Double])
    func aDateThatPassedFiresAtOnce(interval: Double) {
        #expect(TaskEngine.beginTimerDelay(interval) == .zero)
    }

    @Test func aDateAheadIsWaitedFor() {
        #expect(TaskEngine.beginTimerDelay(2) == .seconds(2))
        #expect(TaskEngine.beginTimerDelay(0.25) == .milliseconds(250))
    }
}
