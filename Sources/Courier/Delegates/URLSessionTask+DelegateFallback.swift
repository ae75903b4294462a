import Foundation

/// Darwin gives a task's event to the task's own delegate only when that object implements the method (an
/// Objective-C `respondsToSelector:` check); otherwise the session's delegate gets it. Swift cannot ask whether a
/// protocol method is implemented, so the protocols' default implementations do the forwarding instead: a default
/// that runs on a task's own delegate means that delegate lacks the method, and it hands the call to the session's
/// delegate.
extension URLSessionTask {
    /// The session's delegate as `P`, when `receiver` is this task's own delegate and the session's delegate is
    /// another object: where a method `receiver` does not implement falls back to.
    func sessionFallback<P>(from receiver: AnyObject, as type: P.Type) -> P? {
        guard let own = delegate, own === receiver, let sessionDelegate = session.delegate,
            sessionDelegate !== receiver
        else { return nil }
        return sessionDelegate as? P
    }

    /// Asks the session's delegate a question through its completion-handler method, on the delegate queue, and
    /// waits for the first answer (a delegate that answers twice is heard once).
    func askSessionDelegate<Answer: Sendable>(
        _ ask: @escaping @Sendable (_ answer: @escaping @Sendable (Answer) -> Void) -> Void
    ) async -> Answer {
        await withCheckedContinuation { continuation in
            let once = CompletionOnce()
            session.dispatcher.async {
                ask { answer in
                    if once.claim() { continuation.resume(returning: answer) }
                }
            }
        }
    }
}
