import Foundation

extension URLSession {
    /// How to answer an authentication challenge.
    public enum AuthChallengeDisposition: Int, Sendable {
        /// Use the credential given with the disposition.
        case useCredential = 0
        /// Do what the session would do without a delegate.
        case performDefaultHandling = 1
        /// Cancel the whole request.
        case cancelAuthenticationChallenge = 2
        /// Reject this protection space and try the next one.
        case rejectProtectionSpace = 3
    }

    /// What to do with a data task after its response arrived.
    public enum ResponseDisposition: Int, Sendable {
        /// Cancel the task (it completes with `URLError(.cancelled)`).
        case cancel = 0
        /// Continue the transfer.
        case allow = 1
        /// Turn the data task into a download task.
        case becomeDownload = 2
        /// Turn the data task into a stream task.
        case becomeStream = 3
    }

    /// What to do with a delayed task when it is about to start.
    public enum DelayedRequestDisposition: Int, Sendable {
        /// Start with the original request.
        case continueLoading = 0
        /// Start with the request given with the disposition.
        case useNewRequest = 1
        /// Cancel the task.
        case cancel = 2
    }
}

/// The value of a byte count that is not known (`-1`).
public let NSURLSessionTransferSizeUnknown: Int64 = -1

/// The `userInfo` key of the resume data in the error of a failed download task.
public let NSURLSessionDownloadTaskResumeData = "NSURLSessionDownloadTaskResumeData"

/// The `userInfo` key of the resume data in the error of a failed download task: FoundationNetworking's name for
/// ``NSURLSessionDownloadTaskResumeData`` (the same string, `"NSURLSessionDownloadTaskResumeData"`).
public let URLSessionDownloadTaskResumeData: String = NSURLSessionDownloadTaskResumeData

// `NSURLErrorBackgroundTaskCancelledReasonKey` is Foundation's own: declaring it here too made every use of it
// ambiguous in code that imports both Foundation and Courier.

extension URLError {
    /// The resume data of a failed download task, if it can be resumed.
    public var downloadTaskResumeData: Data? {
        userInfo[NSURLSessionDownloadTaskResumeData] as? Data
    }
}
