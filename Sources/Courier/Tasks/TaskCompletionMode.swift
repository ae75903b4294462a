import Foundation

/// How a task reports its outcome: to delegates, to a completion handler on the delegate queue, or to Swift
/// concurrency.
enum TaskCompletionMode: Sendable {
    /// Delegate calls only.
    case delegate
    /// A data or upload task's completion handler (called on the delegate queue); response and data delegate
    /// calls are not made.
    case dataHandler(@Sendable (Data?, URLResponse?, (any Error)?) -> Void)
    /// `data(for:)` and friends: the body is collected and handed over directly.
    case collect(@Sendable (Result<(Data, URLResponse), any Error>) -> Void)
    /// `bytes(for:)`: the body streams into an async sequence.
    case stream(AsyncBytesSource)
    /// A download task's completion handler (on the delegate queue); the file is deleted when it returns.
    case downloadHandler(@Sendable (URL?, URLResponse?, (any Error)?) -> Void)
    /// `download(for:)` and friends: the file is handed over and the caller owns it.
    case downloadCollect(@Sendable (Result<(URL, URLResponse), any Error>) -> Void)

    /// Whether the engine collects the body in memory.
    var collectsBody: Bool {
        switch self {
        case .dataHandler, .collect: return true
        case .delegate, .stream, .downloadHandler, .downloadCollect: return false
        }
    }

    /// Whether the outcome is delivered by a job on the delegate queue (else directly, to Swift concurrency).
    var completesOnDelegateQueue: Bool {
        switch self {
        case .delegate, .dataHandler, .downloadHandler: return true
        case .collect, .stream, .downloadCollect: return false
        }
    }

}
