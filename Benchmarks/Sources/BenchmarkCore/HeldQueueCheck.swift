import Foundation

/// Scenario (k)'s check that its queue held: every request must end by the driver's cancellation. A request that
/// ended otherwise (answered, refused, timed out) was no longer queued when the resident set was read, so the
/// figure per queued request would understate what a queued request costs.
public final class HeldQueueCheck: @unchecked Sendable {
    private let lock = NSLock()
    private var endedOtherwise = 0
    private var firstOther: String?

    public init() {}

    /// Records how one request ended: `cancelled` when the driver's cancellation ended it; otherwise `how` says what did.
    public func requestEnded(cancelled: Bool, how: @autoclosure () -> String) {
        guard !cancelled else { return }
        let description = how()
        lock.withLock {
            endedOtherwise += 1
            if firstOther == nil { firstOther = description }
        }
    }

    /// Throws unless every one of `count` requests ended by cancellation.
    public func requireAllHeld(count: Int) throws {
        let (other, first) = lock.withLock { (endedOtherwise, firstOther) }
        guard other == 0 else {
            throw CheckFailure(
                message: "\(other) of \(count) requests ended before they were cancelled (the first: \(first ?? "?")): "
                    + "the queue did not hold")
        }
    }
}
