import CourierHTTP
import Foundation

/// Delivers a task's outcome once, by its completion mode, lets go of the task's own delegate and completion handler,
/// then removes the task from its session (which may complete the session's invalidation). Also used for a task
/// cancelled before it ever ran (it has no engine).
extension TaskEventAdapter {
    static func deliverCompletion(task: URLSessionTask, error: (any Error)?, body: Data?, file: URL?) {
        let session = task.session
        switch task.completionMode {
        case .delegate:
            session.dispatcher.async {
                if let file, let downloadTask = task as? URLSessionDownloadTask {
                    task.resolvedDelegate(URLSessionDownloadDelegate.self)?
                        .urlSession(session, downloadTask: downloadTask, didFinishDownloadingTo: file)
                    // The file is the delegate's to read or move only until the method returns. Unlinked, not
                    // removed recursively: what the delegate put in its place is the app's.
                    unlink(file.path)
                }
                task.resolvedDelegate(URLSessionTaskDelegate.self)?
                    .urlSession(session, task: task, didCompleteWithError: error)
                task.releaseDelegate()
                removeFromSession(task)
            }
        case .downloadHandler(let slot):
            let response = task.response
            // Taken out of the task: once the job ran nothing holds the handler (nor what it captured), as on
            // Darwin, even while the app keeps the task.
            let handler = slot.take()
            session.dispatcher.async {
                handler?(error == nil ? file : nil, response, error)
                if let file { unlink(file.path) }
                task.releaseDelegate()
                removeFromSession(task)
            }
        case .downloadCollect(let handler):
            if let error {
                handler(.failure(error))
            } else if let file, let response = task.response {
                handler(.success((file, response)))
            } else {
                handler(.failure(URLErrorMapping.urlError(.badServerResponse, failingURL: task.originalRequest?.url)))
            }
            releaseDelegateAfterQueuedCalls(task)
            removeFromSession(task)
        case .dataHandler(let slot):
            let response = task.response
            let handler = slot.take()
            session.dispatcher.async {
                handler?(error == nil ? (body ?? Data()) : nil, response, error)
                task.releaseDelegate()
                removeFromSession(task)
            }
        case .collect(let handler):
            if let error {
                handler(.failure(error))
            } else if let response = task.response {
                handler(.success((body ?? Data(), response)))
            } else {
                handler(.failure(URLErrorMapping.urlError(.badServerResponse, failingURL: task.originalRequest?.url)))
            }
            releaseDelegateAfterQueuedCalls(task)
            removeFromSession(task)
        case .stream(let source):
            source.finish(error: error)
            releaseDelegateAfterQueuedCalls(task)
            removeFromSession(task)
        }
    }

    /// An outcome delivered straight to Swift concurrency may overtake the task's delegate calls still queued (a
    /// `didSendBodyData`, say): the delegate is let go after them, as their forwarding to the session's delegate
    /// needs the task's own to recognise itself (``URLSessionTask/sessionFallback(from:as:)``).
    private static func releaseDelegateAfterQueuedCalls(_ task: URLSessionTask) {
        guard task.delegate != nil else { return }
        task.session.dispatcher.async { task.releaseDelegate() }
    }

    private static func removeFromSession(_ task: URLSessionTask) {
        if task.session.registry.remove(task) {
            task.session.becomeInvalid()
        }
    }
}

extension URLSessionTask {
    /// The delegate that receives an event of protocol `P`: the task's own delegate when it adopts `P`, else the
    /// session's.
    func resolvedDelegate<P>(_ type: P.Type) -> P? {
        if let own = delegate as? P { return own }
        return session.delegate as? P
    }
}
