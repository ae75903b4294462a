import CourierHTTP
import Foundation

extension URLSession {
    /// Creates a task, registers it, and tells the delegate (synchronously, as Darwin does).
    ///
    /// `delegate` is the task's own (an async call's `delegate:`), set before `didCreateTask`: that is "the first
    /// message a task sends, providing a place to configure the task before it is resumed" (NSURLSession.h), so it
    /// goes to the task's delegate first, as every task message does, and for an async call it is the only place
    /// the caller ever sees the task (its `progress`, its `priority`).
    func register<T: URLSessionTask>(
        delegate taskDelegate: (any URLSessionTaskDelegate)? = nil, _ make: (Int) -> T
    ) -> T {
        let task = make(registry.nextIdentifier())
        if let taskDelegate { task.delegate = taskDelegate }
        if registry.insert(task) {
            task.resolvedDelegate(URLSessionTaskDelegate.self)?.urlSession(self, didCreateTask: task)
        } else {
            task.update { $0.createdOnInvalidSession = true }
            logger.warning("task created on an invalidated session", metadata: ["task": "\(task.taskIdentifier)"])
        }
        return task
    }

    func makeUpload(
        _ request: URLRequest, body: UploadBody, mode: TaskCompletionMode,
        delegate taskDelegate: (any URLSessionTaskDelegate)? = nil
    ) -> URLSessionUploadTask {
        register(delegate: taskDelegate) {
            URLSessionUploadTask(
                session: self, request: request, identifier: $0, completionMode: mode, uploadBody: body)
        }
    }

    func makeResumedDownload(
        _ resumeData: Data, mode: TaskCompletionMode, delegate taskDelegate: (any URLSessionTaskDelegate)? = nil
    ) -> URLSessionDownloadTask {
        let resume = DownloadResumeState.decode(resumeData)
        let request = resume.request ?? URLRequest(url: URL(fileURLWithPath: "/"))
        return register(delegate: taskDelegate) {
            URLSessionDownloadTask(
                session: self, request: request, identifier: $0, completionMode: mode, resume: resume)
        }
    }

}
