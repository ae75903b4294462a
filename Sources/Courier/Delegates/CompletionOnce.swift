import NIOConcurrencyHelpers

/// Lets only the first call of a delegate's completion handler through: a delegate that calls it twice must
/// not drive the engine twice.
final class CompletionOnce: Sendable {
    private let used = NIOLockedValueBox(false)

    /// `true` the first time, `false` ever after.
    func claim() -> Bool {
        used.withLockedValue { used in
            defer { used = true }
            return !used
        }
    }
}
