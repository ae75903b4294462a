import NIOConcurrencyHelpers
import Synchronization

/// Lets only the first call of a delegate's completion handler through: a delegate that calls it twice must
/// not drive the engine twice.
final class CompletionOnce: Sendable {
    private let used = Mutex(false)

    /// `true` the first time, `false` ever after.
    func claim() -> Bool {
        used.withLock { used in
            defer { used = true }
            return !used
        }
    }
}
