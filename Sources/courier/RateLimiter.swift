/// `--limit-rate`: how long a transfer must pause so that the bytes it has received stay at or under the rate.
///
/// A pure value fed the byte counts as they arrive; the caller suspends the task (Courier then stops reading from
/// the socket, so nothing is dropped and no buffer grows) for the pause it returns.
struct RateLimiter {
    /// The limit, in bytes per second.
    let bytesPerSecond: Double
    /// Bytes allowed ahead of the steady rate, so that a transfer does not stop after every small read.
    let burst: Double
    private var start: Double?
    private var received: Double = 0

    init(bytesPerSecond: Int64) {
        self.bytesPerSecond = Double(bytesPerSecond)
        self.burst = min(Double(bytesPerSecond) / 10, 64 * 1024)
    }

    /// Counts `bytes` received at `now` (seconds on any monotonic clock); returns how long to pause, or `nil`
    /// when the transfer is within its rate.
    mutating func record(_ bytes: Int64, at now: Double) -> Double? {
        let start = self.start ?? now
        self.start = start
        received += Double(bytes)
        // The earliest moment the bytes received so far are within the rate.
        let due = start + (received - burst) / bytesPerSecond
        let pause = due - now
        return pause > 0.001 ? pause : nil
    }
}
