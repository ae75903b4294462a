import Foundation
import Synchronization

/// How a task reports its outcome: to delegates, to a completion handler on the delegate queue, or to Swift
/// concurrency.
enum TaskCompletionMode: Sendable {
    /// A data or upload task's completion handler.
    typealias DataHandler = @Sendable (Data?, URLResponse?, (any Error)?) -> Void
    /// A download task's completion handler.
    typealias DownloadHandler = @Sendable (URL?, URLResponse?, (any Error)?) -> Void
    /// What `data(for:)` and friends resume their caller with.
    typealias CollectHandler = @Sendable (Result<(Data, URLResponse), any Error>) -> Void
    /// What `download(for:)` and friends resume their caller with.
    typealias DownloadCollectHandler = @Sendable (Result<(URL, URLResponse), any Error>) -> Void

    /// Delegate calls only.
    case delegate
    /// A data or upload task's completion handler (called on the delegate queue); response and data delegate
    /// calls are not made.
    case dataHandler(HandlerSlot<DataHandler>)
    /// `data(for:)` and friends: the body is collected and handed over directly.
    ///
    /// A plain closure: it captures only the caller's continuation, never the app's objects, so holding it after it
    /// ran keeps nothing alive (and `data(for:)` makes no slot per request).
    case collect(CollectHandler)
    /// `bytes(for:)`: the body streams into an async sequence.
    case stream(AsyncBytesSource)
    /// A download task's completion handler (on the delegate queue); the file is deleted when it returns.
    case downloadHandler(HandlerSlot<DownloadHandler>)
    /// `download(for:)` and friends: the file is handed over and the caller owns it.
    /// A plain closure, as for ``collect(_:)``.
    case downloadCollect(DownloadCollectHandler)

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

/// A task's completion handler, held until the task's outcome is delivered and let go of then, as Darwin does.
///
/// The handler usually captures the object that keeps the task (a loader that stores the task it started), so a
/// task that held its handler for as long as it lives would keep that object, and whatever the handler captured,
/// alive for ever: a cycle nothing breaks.
final class HandlerSlot<Handler: Sendable>: Sendable {
    private let handler: Mutex<Handler?>

    init(_ handler: Handler) {
        self.handler = Mutex(handler)
    }

    /// The handler, the first time only: the slot no longer holds it afterwards.
    func take() -> Handler? {
        handler.withLock { held in
            defer { held = nil }
            return held
        }
    }
}
