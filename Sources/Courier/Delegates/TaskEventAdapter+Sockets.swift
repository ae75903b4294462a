import Foundation

/// The delegate calls of WebSocket and stream tasks once their connection is theirs (after the handshake, or from
/// the start for a stream task): those tasks run outside the engine from then on, but their delegate calls still go
/// through here, on the delegate queue, like every other task's.
extension TaskEventAdapter {
    /// `urlSession(_:webSocketTask:didOpenWithProtocol:)`.
    static func webSocketOpened(_ task: URLSessionWebSocketTask, protocol chosen: String?) {
        guard let delegate = task.resolvedDelegate(URLSessionWebSocketDelegate.self) else { return }
        let session = task.session
        session.dispatcher.async {
            delegate.urlSession(session, webSocketTask: task, didOpenWithProtocol: chosen)
        }
    }

    /// `urlSession(_:webSocketTask:didCloseWith:reason:)`.
    static func webSocketClosed(
        _ task: URLSessionWebSocketTask, code: URLSessionWebSocketTask.CloseCode, reason: Data?
    ) {
        guard let delegate = task.resolvedDelegate(URLSessionWebSocketDelegate.self) else { return }
        let session = task.session
        session.dispatcher.async {
            delegate.urlSession(session, webSocketTask: task, didCloseWith: code, reason: reason)
        }
    }

    /// `urlSession(_:readClosedFor:)` or `urlSession(_:writeClosedFor:)`, unless the task already completed (its
    /// streams captured, or cancelled).
    static func streamSideClosed(_ task: URLSessionStreamTask, read: Bool) {
        guard task.state != .completed else { return }
        let session = task.session
        session.dispatcher.async {
            guard let delegate = task.resolvedDelegate(URLSessionStreamDelegate.self) else { return }
            if read {
                delegate.urlSession(session, readClosedFor: task)
            } else {
                delegate.urlSession(session, writeClosedFor: task)
            }
        }
    }

    /// `urlSession(_:streamTask:didBecome:outputStream:)`; the task then lets go of its own delegate and leaves its
    /// session.
    static func streamsCaptured(_ task: URLSessionStreamTask, _ pair: CapturedStreamPair) {
        let session = task.session
        session.dispatcher.async {
            task.resolvedDelegate(URLSessionStreamDelegate.self)?.urlSession(
                session, streamTask: task, didBecome: pair.input, outputStream: pair.output)
            // The task has completed (it sends no further delegate message): it lets go of its delegate as every
            // completed task does, or a delegate that keeps its task would never be freed.
            task.releaseDelegate()
            if session.registry.remove(task) {
                session.becomeInvalid()
            }
        }
    }
}
