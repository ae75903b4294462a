import Foundation

#if canImport(Courier)
    import Courier
#elseif canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What the manager keeps for one task (AFURLSessionManagerTaskDelegate): its two `Progress` objects, the body of a
/// data task as it arrives, a download's destination and final file, and the completion. Removed from the manager
/// when the task completes; it holds the task only weakly, so nothing keeps a finished task alive.
final class SessionTaskDelegate: @unchecked Sendable {
    let uploadProgress: Progress
    let downloadProgress: Progress
    let uploadProgressHandler: SessionManager.ProgressHandler?
    let downloadProgressHandler: SessionManager.ProgressHandler?
    let destination: SessionManager.Destination?
    let completionHandler: SessionManager.CompletionHandler?
    private let lock = NSLock()
    private var data = Data()
    private var movedFile: URL?
    private var moveError: (any Error)?
    private var collectedMetrics: URLSessionTaskMetrics?
    private var storedChallengeError: (any Error)?

    init(
        task: URLSessionTask,
        manager: SessionManager? = nil,
        uploadProgressHandler: SessionManager.ProgressHandler? = nil,
        downloadProgressHandler: SessionManager.ProgressHandler? = nil,
        destination: SessionManager.Destination? = nil,
        completionHandler: SessionManager.CompletionHandler?
    ) {
        self.uploadProgressHandler = uploadProgressHandler
        self.downloadProgressHandler = downloadProgressHandler
        self.destination = destination
        self.completionHandler = completionHandler
        uploadProgress = Self.progress(for: task, manager: manager)
        downloadProgress = Self.progress(for: task, manager: manager)
    }

    /// A progress whose cancel, pause and resume act on `task`, through `manager` so that its notifications are
    /// posted (both weakly held).
    private static func progress(for task: URLSessionTask, manager: SessionManager?) -> Progress {
        let progress = Progress(totalUnitCount: NSURLSessionTransferSizeUnknown)
        progress.isCancellable = true
        progress.cancellationHandler = { [weak task] in task?.cancel() }
        let pause: @Sendable () -> Void = { [weak task, weak manager] in
            guard let task else { return }
            if let manager { manager.suspend(task) } else { task.suspend() }
        }
        let resume: @Sendable () -> Void = { [weak task, weak manager] in
            guard let task else { return }
            if let manager { manager.resume(task) } else { task.resume() }
        }
        #if canImport(Courier)
            // Suspensions nest: the progress holds at most one (see Courier's `ProgressPauseFollower`).
            ProgressPauseFollower(pause: pause, resume: resume).follow(progress)
        #else
            progress.isPausable = true
            progress.pausingHandler = pause
            progress.resumingHandler = resume
        #endif
        return progress
    }

    func sent(_ totalBytesSent: Int64, of expected: Int64) {
        uploadProgress.totalUnitCount = expected
        uploadProgress.completedUnitCount = totalBytesSent
        uploadProgressHandler?(uploadProgress)
    }

    func received(_ chunk: Data, total: Int64, expected: Int64) {
        lock.withLock { data.append(chunk) }
        downloadProgress.totalUnitCount = expected
        downloadProgress.completedUnitCount = total
        downloadProgressHandler?(downloadProgress)
    }

    func wrote(total: Int64, expected: Int64) {
        downloadProgress.totalUnitCount = expected
        downloadProgress.completedUnitCount = total
        downloadProgressHandler?(downloadProgress)
    }

    /// A download finished at `location`: moves it where the destination says. Returns the error of a failed move.
    func finishDownloading(_ task: URLSessionDownloadTask, to location: URL) -> (any Error)? {
        guard let destination, let response = task.response else { return nil }
        return move(location, to: destination(location, response))
    }

    /// Moves the file to `target` (replacing a file there by `rename(2)` only, see ``FilePlacement``); the error of a
    /// failed move.
    func move(_ location: URL, to target: URL) -> (any Error)? {
        do {
            try FilePlacement.place(location, at: target)
            lock.withLock { movedFile = target }
            return nil
        } catch {
            lock.withLock { moveError = error }
            return error
        }
    }

    var metrics: URLSessionTaskMetrics? {
        get { lock.withLock { collectedMetrics } }
        set { lock.withLock { collectedMetrics = newValue } }
    }

    /// The error the manager failed the task with when it cancelled one of its challenges (a server its
    /// ``SessionManager/securityPolicy`` refused): reported instead of the cancellation that follows, as
    /// AFNetworking reports the error it associates with the task.
    var challengeError: (any Error)? {
        get { lock.withLock { storedChallengeError } }
        set { lock.withLock { storedChallengeError = newValue } }
    }

    /// The body received, the file a download was moved to, and the error of a failed move.
    var outcome: (data: Data, file: URL?, moveError: (any Error)?) {
        lock.withLock { (data, movedFile, moveError) }
    }
}
