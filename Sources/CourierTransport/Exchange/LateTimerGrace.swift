import NIOCore

/// What a timeout timer does when it fires well after its deadline.
///
/// A timer that fires late means the event loop was held (a loaded machine), and what the timed call waits for may
/// already be in the kernel, unread. The timer then gives the loop one more turn, to read first, before it times the
/// call out. HTTP/1 request timers and stream-task call timers share this rule.
enum LateTimerGrace {
    /// How late a timer may fire and still time out at once.
    static let slack = TimeAmount.milliseconds(20)
    /// The delay that gives the loop its extra turn.
    static let extraTurn = TimeAmount.milliseconds(1)

    /// Whether a timer for `deadline` that fires at `now` fired late enough to give the loop its extra turn.
    static func firedLate(_ deadline: NIODeadline, now: NIODeadline) -> Bool {
        now - deadline > slack
    }
}
