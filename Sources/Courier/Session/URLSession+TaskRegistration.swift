import CourierHTTP
import Foundation

extension URLSession {
    /// Creates a task, registers it, and tells the delegate (synchronously, as Darwin does).
    func register<T: URLSessionTask>(_ make: (Int) -> T) -> T {
        let task = make(registry.nextIdentifier())
        if registry.insert(task) {
            (delegate as? any URLSessionTaskDelegate)?.urlSession(self, didCreateTask: task)
        } else {
            task.update { $0.createdOnInvalidSession = true }
            logger.warning("task created on an invalidated session", metadata: ["task": "\(task.taskIdentifier)"])
        }
        return task
    }

    func makeUpload(_ request: URLRequest, body: UploadBody, mode: TaskCompletionMode) -> URLSessionUploadTask {
        register {
            URLSessionUploadTask(
                session: self, request: request, identifier: $0, completionMode: mode, uploadBody: body)
        }
    }

    func makeResumedDownload(_ resumeData: Data, mode: TaskCompletionMode) -> URLSessionDownloadTask {
        let resume = DownloadResumeState.decode(resumeData)
        let request = resume.request ?? URLRequest(url: URL(fileURLWithPath: "/"))
        return register {
            URLSessionDownloadTask(
                session: self, request: request, identifier: $0, completionMode: mode, resume: resume)
        }
    }

}
