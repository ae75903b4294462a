import CourierHTTP
import CourierTransport
import Foundation
import NIOPosix

extension URLSessionTask {
    /// Builds the engine that runs this task and the adapter it reports to: what the task is (``TaskEngine/Spec``)
    /// and what it runs on (``TaskEngine/Environment``). Called once, at the first `resume()`, under the task's
    /// lock: it reads the task's state but calls no user code.
    func makeEngine(state: MutableState) -> (TaskEngine, TaskEventAdapter) {
        let adapter = TaskEventAdapter(task: self)
        let kind: TaskEngine.Spec.Kind
        if let upload = self as? URLSessionUploadTask {
            kind = .upload(upload.uploadBody)
        } else if let download = self as? URLSessionDownloadTask {
            kind = .download(resume: download.resume)
        } else if let webSocket = self as? URLSessionWebSocketTask {
            kind = .webSocket(webSocket.upgrade)
        } else {
            kind = .data
        }
        // The task's lock is held: read the task's own delegate from `state`, not through `delegate`.
        func has<P>(_ type: P.Type) -> Bool { state.delegate is P || session.delegate is P }
        let isDelegateDataTask: Bool
        if case .delegate = completionMode, self is URLSessionDataTask {
            isDelegateDataTask = has(URLSessionDataDelegate.self)
        } else {
            isDelegateDataTask = false
        }
        // The engine starts from the task's original request (the two share its storage) unless from another one.
        let request: URLRequest
        if case .webSocket = kind {
            let current = currentRequest(in: state) ?? URLRequest(url: URL(fileURLWithPath: "/"))
            request = URLSessionWebSocketTask.handshakeRequest(for: current)
        } else if let replaced = state.replacedRequest.value {
            request = replaced
        } else {
            request = storedOriginalRequest ?? URLRequest(url: URL(fileURLWithPath: "/"))
        }
        let spec = TaskEngine.Spec(
            request: request,
            taskIdentifier: taskIdentifier,
            kind: kind,
            earliestBeginDate: state.earliestBeginDate,
            failure: startFailure(
                hasRequest: storedOriginalRequest != nil, createdOnInvalidSession: state.createdOnInvalidSession),
            asksForRedirects: has(URLSessionTaskDelegate.self),
            asksForResponses: isDelegateDataTask
        )
        let environment = TaskEngine.Environment(
            session: session.engineEnvironment,
            creationContext: creationContext,
            task: self,
            // The adapter strongly: it holds the engine only until completion, so there is no lasting cycle, and a
            // weak reference would slow every retain and release of it.
            host: adapter
        )
        let engine = TaskEngine(spec: spec, environment: environment, sink: adapter)
        adapter.attach(engine)
        return (engine, adapter)
    }

    /// Why the task fails as soon as it starts, if it cannot run.
    func startFailure(hasRequest: Bool, createdOnInvalidSession: Bool) -> TransferError? {
        if createdOnInvalidSession {
            return .cancelled("the task was created after its session was invalidated")
        }
        if let reason = unsupportedReason {
            return .unsupportedURL(reason)
        }
        if let failure = session.configurationFailure {
            return failure
        }
        if !hasRequest {
            return .unsupportedURL("unsupported URL: the task has no request")
        }
        return nil
    }
}
