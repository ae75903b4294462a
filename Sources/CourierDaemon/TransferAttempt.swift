import Courier
import Foundation

/// What an attempt tells the daemon, on the daemon's queue.
protocol TransferAttemptObserver: AnyObject, Sendable {
    func attemptReceivedResponse(_ key: TaskKey, attempt: TransferAttempt, response: URLResponse)
    func attemptResumed(_ key: TaskKey, attempt: TransferAttempt, offset: Int64, expectedTotal: Int64)
    func attemptWrote(_ key: TaskKey, attempt: TransferAttempt, bytes: Int64, total: Int64, expected: Int64)
    func attemptSent(_ key: TaskKey, attempt: TransferAttempt, bytes: Int64, total: Int64, expected: Int64)
    func attemptEnded(_ key: TaskKey, attempt: TransferAttempt, file: URL?, error: URLError?)
    func attemptChallenged(
        _ key: TaskKey, attempt: TransferAttempt, challenge: URLAuthenticationChallenge,
        completion: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void)
}

/// One attempt at a background transfer, run by Courier's own engine: a session of its own whose download folder
/// is the task's folder (so the partial file is the only file there and can be found after a crash), a download or
/// upload task, and a delegate that hands every event to the daemon's queue. A finished download is renamed into
/// the session's folder before the delegate method returns (Courier deletes it afterwards).
final class TransferAttempt: NSObject, URLSessionDownloadDelegate, URLSessionDataDelegate, @unchecked Sendable {
    let key: TaskKey
    let folder: URL
    private let queue: DispatchQueue
    private weak var observer: (any TransferAttemptObserver)?
    /// Where a finished download is moved.
    private let finishedFile: URL
    private var session: URLSession!
    private(set) var task: URLSessionTask!
    /// Set on the delegate queue before `didCompleteWithError`.
    private var movedFile: URL?

    init(
        key: TaskKey, record: TaskRecord, folder: URL, finishedFile: URL, resumeData: Data?,
        queue: DispatchQueue, observer: any TransferAttemptObserver
    ) {
        self.key = key
        self.folder = folder
        self.finishedFile = finishedFile
        self.queue = queue
        self.observer = observer
        super.init()
        let configuration = URLSessionConfiguration.ephemeral
        let settings = record.spec.settings
        configuration.timeoutIntervalForRequest = settings.timeoutIntervalForRequest
        configuration.timeoutIntervalForResource = max(1, record.deadline.timeIntervalSinceNow)
        configuration.httpAdditionalHeaders = Dictionary(
            settings.additionalHeaders.compactMap { $0.count == 2 ? ($0[0], $0[1]) : nil },
            uniquingKeysWith: { _, last in last })
        configuration.allowsExpensiveNetworkAccess = settings.allowsExpensiveNetworkAccess
        configuration.courierAdditionalTrustedCertificates = settings.additionalTrustedCertificates
        if let minimum = settings.tlsMinimumVersion.flatMap(tls_protocol_version_t.init(rawValue:)) {
            configuration.tlsMinimumSupportedProtocolVersion = minimum
        }
        if let maximum = settings.tlsMaximumVersion.flatMap(tls_protocol_version_t.init(rawValue:)) {
            configuration.tlsMaximumSupportedProtocolVersion = maximum
        }
        configuration.courierAllowsHTTP2 = settings.allowsHTTP2
        configuration.httpMaximumConnectionsPerHost = settings.maximumConnectionsPerHost
        configuration.courierDownloadDirectory = folder
        let delegateQueue = OperationQueue()
        delegateQueue.maxConcurrentOperationCount = 1
        session = URLSession(configuration: configuration, delegate: self, delegateQueue: delegateQueue)
        let request = record.spec.request.request
        switch record.spec.kind {
        case .download:
            task = resumeData.map { session.downloadTask(withResumeData: $0) } ?? session.downloadTask(with: request)
        case .uploadFile(let path):
            task = session.uploadTask(with: request, fromFile: URL(fileURLWithPath: path))
        }
        if record.spec.countOfBytesClientExpectsToReceive >= 0 {
            task.countOfBytesClientExpectsToReceive = record.spec.countOfBytesClientExpectsToReceive
        }
        task.priority = settings.isDiscretionary ? URLSessionTask.lowPriority : URLSessionTask.defaultPriority
    }

    func start() { task.resume() }
    func suspend() { task.suspend() }
    func resume() { task.resume() }

    func cancel(producingResumeData: Bool) {
        if producingResumeData, let download = task as? URLSessionDownloadTask {
            download.cancel(byProducingResumeData: { _ in })
        } else {
            task.cancel()
        }
    }

    /// Lets the session go (it holds this delegate until invalidated).
    func finish() {
        session.finishTasksAndInvalidate()
    }

    // MARK: - Delegate (on the attempt's delegate queue)

    func urlSession(
        _ session: URLSession, downloadTask: URLSessionDownloadTask, didResumeAtOffset fileOffset: Int64,
        expectedTotalBytes: Int64
    ) {
        let response = downloadTask.response
        queue.async { [self] in
            guard let observer else { return }
            if let response { observer.attemptReceivedResponse(key, attempt: self, response: response) }
            observer.attemptResumed(key, attempt: self, offset: fileOffset, expectedTotal: expectedTotalBytes)
        }
    }

    func urlSession(
        _ session: URLSession, downloadTask: URLSessionDownloadTask, didWriteData bytesWritten: Int64,
        totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64
    ) {
        let response = downloadTask.response
        queue.async { [self] in
            guard let observer else { return }
            if let response { observer.attemptReceivedResponse(key, attempt: self, response: response) }
            observer.attemptWrote(
                key, attempt: self, bytes: bytesWritten, total: totalBytesWritten, expected: totalBytesExpectedToWrite)
        }
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) {
        queue.async { [self] in
            observer?.attemptSent(
                key, attempt: self, bytes: bytesSent, total: totalBytesSent, expected: totalBytesExpectedToSend)
        }
    }

    /// HTTP authentication goes to the daemon, which asks the attached app; server trust is evaluated by default
    /// (with the session's trusted certificates), client certificates are not offered.
    func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        let method = challenge.protectionSpace.authenticationMethod
        guard method != NSURLAuthenticationMethodServerTrust, method != NSURLAuthenticationMethodClientCertificate
        else { return completionHandler(.performDefaultHandling, nil) }
        queue.async { [self] in
            guard let observer else { return completionHandler(.performDefaultHandling, nil) }
            observer.attemptChallenged(key, attempt: self, challenge: challenge, completion: completionHandler)
        }
    }

    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL) {
        // Courier deletes `location` when this method returns: keep it by renaming it (same file system).
        unlink(finishedFile.path)
        if rename(location.path, finishedFile.path) == 0 { movedFile = finishedFile }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let file = movedFile
        let response = task.response
        let failure = error.map { ($0 as? URLError) ?? URLError(.unknown) }
        queue.async { [self] in
            guard let observer else { return }
            if let response { observer.attemptReceivedResponse(key, attempt: self, response: response) }
            observer.attemptEnded(key, attempt: self, file: file, error: failure)
        }
    }
}
