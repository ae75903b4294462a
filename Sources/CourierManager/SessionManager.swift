import Foundation

#if canImport(Courier)
    import Courier
#elseif canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// AFURLSessionManager in Swift: one session whose delegate is the manager, a per-task delegate object for every
/// task it makes (its `Progress` objects, its body, its completion), a closure hook for every delegate event,
/// notifications, and a response serializer.
///
/// ```swift
/// // AFNetworking
/// AFURLSessionManager *manager = [[AFURLSessionManager alloc] initWithSessionConfiguration:configuration];
/// NSURLSessionDataTask *task = [manager dataTaskWithRequest:request uploadProgress:nil downloadProgress:nil
///     completionHandler:^(NSURLResponse *response, id responseObject, NSError *error) { … }];
/// [task resume];
///
/// // CourierManager
/// let manager = SessionManager(sessionConfiguration: configuration)
/// let task = manager.dataTask(with: request) { response, responseObject, error in … }
/// task.resume()
/// ```
///
/// Completion handlers run on ``completionQueue`` (the main queue when `nil`), inside ``completionGroup`` when set;
/// progress handlers and hooks run on ``operationQueue``, the session's delegate queue (one operation at a time).
/// The session holds the manager until it is invalidated
/// (``invalidateSessionCancelingTasks(_:resetSession:)``), as `URLSession` holds its delegate.
open class SessionManager: NSObject, URLSessionDataDelegate, URLSessionDownloadDelegate, @unchecked Sendable {
    /// A task's completion: the response, the serialized response object (a download's file URL), and the error.
    public typealias CompletionHandler = @Sendable (URLResponse?, Any?, (any Error)?) -> Void
    /// Told a task's upload or download progress.
    public typealias ProgressHandler = @Sendable (Progress) -> Void
    /// Where a finished download goes: given the temporary file and the response.
    public typealias Destination = @Sendable (URL, URLResponse) -> URL

    /// The configuration the session was made with.
    public let sessionConfiguration: URLSessionConfiguration
    /// The session's delegate queue (one operation at a time).
    public let operationQueue: OperationQueue

    private let lock = NSLock()
    private var storedSession: URLSession?
    /// The per-task delegates, by task object: a task identifier is unique in one session only, and after
    /// ``invalidateSessionCancelingTasks(_:resetSession:)`` with `resetSession` the new session numbers its tasks
    /// from 1 again while the old session's tasks still finish (or deliver their cancellation) through the manager.
    private var delegates: [ObjectIdentifier: TrackedTask] = [:]
    private var storedResponseSerializer: any ResponseSerialization = JSONResponseSerializer()
    private var storedCompletionQueue: DispatchQueue?
    private var storedCompletionGroup: DispatchGroup?
    private var storedHooks = SessionManagerHooks()
    #if canImport(Courier) || canImport(Security)
        private var storedSecurityPolicy = SecurityPolicy.default
    #endif

    /// Makes a manager and its session.
    ///
    /// - Parameter sessionConfiguration: The configuration (default: `.default`).
    public init(sessionConfiguration: URLSessionConfiguration = .default) {
        self.sessionConfiguration = sessionConfiguration
        operationQueue = OperationQueue()
        operationQueue.maxConcurrentOperationCount = 1
        operationQueue.name = "courier.manager.delegate"
        super.init()
        storedSession = URLSession(configuration: sessionConfiguration, delegate: self, delegateQueue: operationQueue)
    }

    /// The session (a new one after ``invalidateSessionCancelingTasks(_:resetSession:)`` with `resetSession`).
    public var session: URLSession {
        lock.withLock {
            guard let storedSession else { preconditionFailure("the manager's session is always set after init") }
            return storedSession
        }
    }

    /// Serializes responses for the completion handlers (default: JSON).
    public var responseSerializer: any ResponseSerialization {
        get { lock.withLock { storedResponseSerializer } }
        set { lock.withLock { storedResponseSerializer = newValue } }
    }

    /// The queue completion handlers run on; `nil` means the main queue.
    public var completionQueue: DispatchQueue? {
        get { lock.withLock { storedCompletionQueue } }
        set { lock.withLock { storedCompletionQueue = newValue } }
    }

    /// A group every completion handler runs in, if set.
    public var completionGroup: DispatchGroup? {
        get { lock.withLock { storedCompletionGroup } }
        set { lock.withLock { storedCompletionGroup = newValue } }
    }

    #if canImport(Courier) || canImport(Security)
        /// Answers server-trust challenges when no ``SessionManagerHooks/sessionDidReceiveChallenge`` hook does and
        /// no ``SessionManagerHooks/taskDidReceiveChallenge`` hook decides (default: ``SecurityPolicy/default``). A
        /// server it refuses fails the task with `URLError(.serverCertificateUntrusted)`, whose
        /// `NSURLErrorFailingURLPeerTrustErrorKey` holds the server's trust, as in AFNetworking.
        public var securityPolicy: SecurityPolicy {
            get { lock.withLock { storedSecurityPolicy } }
            set { lock.withLock { storedSecurityPolicy = newValue } }
        }
    #endif

    /// The closure hooks (see ``SessionManagerHooks``).
    public var hooks: SessionManagerHooks {
        get { lock.withLock { storedHooks } }
        set { lock.withLock { storedHooks = newValue } }
    }

    // MARK: - Tasks

    /// The session's unfinished tasks (AFNetworking's `tasks`; asynchronous here rather than a blocking wait).
    public var tasks: [URLSessionTask] {
        get async { await allTasks().all }
    }

    /// The session's unfinished data tasks that are not upload tasks.
    public var dataTasks: [URLSessionDataTask] {
        get async { await allTasks().data }
    }

    /// The session's unfinished upload tasks.
    public var uploadTasks: [URLSessionUploadTask] {
        get async { await allTasks().upload }
    }

    /// The session's unfinished download tasks.
    public var downloadTasks: [URLSessionDownloadTask] {
        get async { await allTasks().download }
    }

    private func allTasks() async -> (
        all: [URLSessionTask], data: [URLSessionDataTask], upload: [URLSessionUploadTask],
        download: [URLSessionDownloadTask]
    ) {
        let session = self.session
        return await withCheckedContinuation { continuation in
            session.getTasksWithCompletionHandler { data, upload, download in
                let plainData = data.filter { !($0 is URLSessionUploadTask) }
                let all: [URLSessionTask] = plainData + upload + download
                continuation.resume(returning: (all, plainData, upload, download))
            }
        }
    }

    /// Invalidates the session, cancelling its tasks or letting them finish; with `resetSession`, makes a new
    /// session with the same configuration for the tasks made from then on.
    public func invalidateSessionCancelingTasks(_ cancelPendingTasks: Bool, resetSession: Bool) {
        let old = session
        if cancelPendingTasks {
            old.invalidateAndCancel()
        } else {
            old.finishTasksAndInvalidate()
        }
        guard resetSession else { return }
        let fresh = URLSession(configuration: sessionConfiguration, delegate: self, delegateQueue: operationQueue)
        lock.withLock { storedSession = fresh }
    }

    /// The upload progress of a task the manager made.
    public func uploadProgress(for task: URLSessionTask) -> Progress? {
        delegate(for: task)?.uploadProgress
    }

    /// The download progress of a task the manager made.
    public func downloadProgress(for task: URLSessionTask) -> Progress? {
        delegate(for: task)?.downloadProgress
    }

    // MARK: - Task factories

    /// A data task whose body is collected and serialized for `completionHandler`.
    public func dataTask(
        with request: URLRequest,
        uploadProgress: ProgressHandler? = nil,
        downloadProgress: ProgressHandler? = nil,
        completionHandler: CompletionHandler?
    ) -> URLSessionDataTask {
        let task = session.dataTask(with: request)
        return track(
            task, uploadProgressHandler: uploadProgress, downloadProgressHandler: downloadProgress,
            completionHandler: completionHandler)
    }

    /// An upload task that sends the file at `fileURL`.
    public func uploadTask(
        with request: URLRequest,
        fromFile fileURL: URL,
        progress: ProgressHandler? = nil,
        completionHandler: CompletionHandler?
    ) -> URLSessionUploadTask {
        let task = session.uploadTask(with: request, fromFile: fileURL)
        return track(task, uploadProgressHandler: progress, completionHandler: completionHandler)
    }

    /// An upload task that sends `bodyData`.
    public func uploadTask(
        with request: URLRequest,
        from bodyData: Data?,
        progress: ProgressHandler? = nil,
        completionHandler: CompletionHandler?
    ) -> URLSessionUploadTask {
        let task = session.uploadTask(with: request, from: bodyData ?? Data())
        return track(task, uploadProgressHandler: progress, completionHandler: completionHandler)
    }

    /// An upload task that sends the request's body stream.
    public func uploadTask(
        withStreamedRequest request: URLRequest,
        progress: ProgressHandler? = nil,
        completionHandler: CompletionHandler?
    ) -> URLSessionUploadTask {
        let task = session.uploadTask(withStreamedRequest: request)
        return track(task, uploadProgressHandler: progress, completionHandler: completionHandler)
    }

    /// A download task whose file goes where `destination` says; the completion's response object is that URL.
    public func downloadTask(
        with request: URLRequest,
        progress: ProgressHandler? = nil,
        destination: Destination?,
        completionHandler: CompletionHandler?
    ) -> URLSessionDownloadTask {
        let task = session.downloadTask(with: request)
        return track(
            task, downloadProgressHandler: progress, destination: destination, completionHandler: completionHandler)
    }

    /// A download task that resumes from `resumeData`.
    public func downloadTask(
        withResumeData resumeData: Data,
        progress: ProgressHandler? = nil,
        destination: Destination?,
        completionHandler: CompletionHandler?
    ) -> URLSessionDownloadTask {
        let task = session.downloadTask(withResumeData: resumeData)
        return track(
            task, downloadProgressHandler: progress, destination: destination, completionHandler: completionHandler)
    }

    /// Resumes `task` and posts ``Foundation/Notification/Name/courierManagerTaskDidResume``. AFNetworking swaps in a
    /// `resume` of its own on every task class to post its notification; Swift cannot, so the notification comes for
    /// tasks resumed here — by the HTTP verbs and the tasks' `Progress` — not for a direct `task.resume()`.
    public func resume(_ task: URLSessionTask) {
        task.resume()
        NotificationCenter.default.post(name: .courierManagerTaskDidResume, object: task)
    }

    /// Suspends `task` and posts ``Foundation/Notification/Name/courierManagerTaskDidSuspend`` (see ``resume(_:)``).
    public func suspend(_ task: URLSessionTask) {
        task.suspend()
        NotificationCenter.default.post(name: .courierManagerTaskDidSuspend, object: task)
    }

    // MARK: - The per-task delegates

    /// Gives `task` its per-task delegate (progress, body, destination, completion) and returns it.
    private func track<Task: URLSessionTask>(
        _ task: Task, uploadProgressHandler: ProgressHandler? = nil, downloadProgressHandler: ProgressHandler? = nil,
        destination: Destination? = nil, completionHandler: CompletionHandler?
    ) -> Task {
        let delegate = SessionTaskDelegate(
            task: task, manager: self, uploadProgressHandler: uploadProgressHandler,
            downloadProgressHandler: downloadProgressHandler, destination: destination,
            completionHandler: completionHandler)
        lock.withLock { delegates[ObjectIdentifier(task)] = TrackedTask(task: task, delegate: delegate) }
        return task
    }

    func delegate(for task: URLSessionTask) -> SessionTaskDelegate? {
        lock.withLock {
            // The weak reference tells a live task from a freed one whose address a new task reuses.
            guard let entry = delegates[ObjectIdentifier(task)], entry.task === task else { return nil }
            return entry.delegate
        }
    }

    func replaceDelegate(for task: URLSessionTask, with delegate: SessionTaskDelegate) {
        lock.withLock { delegates[ObjectIdentifier(task)] = TrackedTask(task: task, delegate: delegate) }
    }

    func removeDelegate(for task: URLSessionTask) -> SessionTaskDelegate? {
        lock.withLock {
            let key = ObjectIdentifier(task)
            guard let entry = delegates[key] else { return nil }
            guard entry.task === task else {
                if entry.task == nil { delegates[key] = nil }
                return nil
            }
            delegates[key] = nil
            return entry.delegate
        }
    }

    /// How many tasks the manager still tracks (for tests of its bookkeeping).
    var trackedTaskCount: Int { lock.withLock { delegates.count } }
}

/// A task the manager tracks (held weakly, as the session holds it while it runs) and its per-task delegate.
private struct TrackedTask {
    weak var task: URLSessionTask?
    let delegate: SessionTaskDelegate
}
