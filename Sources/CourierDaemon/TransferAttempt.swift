import Courier
import Foundation

/// What an attempt tells the daemon, on the daemon's queue.
protocol TransferAttemptObserver: AnyObject, Sendable {
    func attemptEnded(_ key: TaskKey, attempt: TransferAttempt, response: URLResponse?, file: URL?, error: URLError?)
    func attemptChallenged(
        _ key: TaskKey, attempt: TransferAttempt, challenge: URLAuthenticationChallenge,
        completion: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void)
}

/// Where an attempt stands, read by the daemon's progress poll.
struct AttemptProgress {
    /// The task's response, when it is not the one the last poll saw.
    var newResponse: URLResponse?
    var received: Int64
    var expectedToReceive: Int64
    var sent: Int64
    var expectedToSend: Int64
}

/// One attempt at a background transfer, run by Courier's own engine: a session of its own whose download folder
/// is the task's folder (so the partial file is the only file there and can be found after a crash), and a download
/// or upload task with a completion handler. The handler renames a finished download into the session's folder
/// before it returns (Courier deletes the file afterwards) and hands the outcome to the daemon's queue. Progress is
/// not delivered write by write (a delegate call for every 64 KiB costs a fifth of a loopback download's speed): the
/// daemon polls the task's counters (``poll()``). Authentication challenges go to the daemon.
final class TransferAttempt: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    let key: TaskKey
    let folder: URL
    /// The durable offset the attempt continues from (0 when it starts from the beginning), and its file's name.
    let resumedFrom: Int64
    let resumedFileName: String?
    private let queue: DispatchQueue
    private weak var observer: (any TransferAttemptObserver)?
    /// Where a finished download is moved.
    private let finishedFile: URL
    private var session: URLSession!
    private(set) var task: URLSessionTask!
    /// The response the last poll saw (on the daemon's queue).
    private var polledResponse: URLResponse?

    init(
        key: TaskKey, record: TaskRecord, folder: URL, finishedFile: URL, resumeData: Data?, resumedFrom: Int64,
        resumedFileName: String?, queue: DispatchQueue, observer: any TransferAttemptObserver
    ) {
        self.resumedFileName = resumeData == nil ? nil : resumedFileName
        self.key = key
        self.folder = folder
        self.finishedFile = finishedFile
        self.resumedFrom = resumeData == nil ? 0 : resumedFrom
        self.queue = queue
        self.observer = observer
        super.init()
        session = URLSession(
            configuration: Self.configuration(for: record, folder: folder), delegate: self,
            delegateQueue: Self.delegateQueue())
        let request = record.spec.request.request
        switch record.spec.kind {
        case .download:
            let handler: @Sendable (URL?, URLResponse?, (any Error)?) -> Void = {
                [weak self] location, response, error in
                self?.ended(location: location, response: response, error: error)
            }
            task =
                resumeData.map { session.downloadTask(withResumeData: $0, completionHandler: handler) }
                ?? session.downloadTask(with: request, completionHandler: handler)
        case .uploadFile(let path):
            task = session.uploadTask(with: request, fromFile: URL(fileURLWithPath: path)) {
                [weak self] body, response, error in
                self?.ended(location: nil, response: response, body: body, error: error)
            }
        }
        if record.spec.countOfBytesClientExpectsToReceive >= 0 {
            task.countOfBytesClientExpectsToReceive = record.spec.countOfBytesClientExpectsToReceive
        }
        task.priority =
            record.spec.settings.isDiscretionary ? URLSessionTask.lowPriority : URLSessionTask.defaultPriority
    }

    /// The daemon's session for a task: the values the app's configuration carried, and the task's folder.
    static func configuration(for record: TaskRecord, folder: URL) -> URLSessionConfiguration {
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
        configuration.courierMaximumDecompressionRatio =
            settings.maximumDecompressionRatio > 0 ? settings.maximumDecompressionRatio : nil
        configuration.courierDownloadDirectory = folder
        // No cache: background transfers neither read nor fill one, whatever the cache policy (README), as a Darwin
        // background session has none by default. `.ephemeral`'s would be a 4 MB cache per attempt that nothing
        // reads, and an upload under `.returnCacheDataDontLoad` would fail as a cache miss instead of being sent.
        configuration.urlCache = nil
        configuration.urlCredentialStorage = settings.credentialFile.map {
            // Read now, so that a credential the app stored since the last attempt is known; a copy in memory, so
            // that the daemon never rewrites the app's file from what may by then be an old copy of it.
            URLCredentialStorage(copyOf: URL(fileURLWithPath: $0))
        }
        configuration.httpShouldSetCookies = settings.usesCookies
        configuration.httpCookieAcceptPolicy =
            HTTPCookie.AcceptPolicy(rawValue: settings.cookieAcceptPolicy) ?? .onlyFromMainDocumentDomain
        configuration.httpCookieStorage = settings.usesCookies ? cookieStorage(settings) : nil
        if let proxies = settings.proxyDictionary,
            let dictionary = try? JSONSerialization.jsonObject(with: proxies) as? [String: Any]
        {
            configuration.connectionProxyDictionary = dictionary
        }
        // The app's proxy variables, not the daemon's environment (an app of an earlier version sends none).
        configuration.proxyEnvironment = settings.proxyEnvironment
        return configuration
    }

    /// The cookies of the attempt: the app's persistent jar, opened again (the app may have changed it since), with
    /// the cookies that are only in the app's memory; or those alone for an app whose storage has no jar (cookies
    /// the server sets then stay with the attempt).
    private static func cookieStorage(_ settings: BackgroundTransferSettings) -> HTTPCookieStorage {
        let storage =
            settings.cookieJarFolder.map { HTTPCookieStorage(persistentIn: URL(fileURLWithPath: $0)) }
            ?? HTTPCookieStorage()
        storage.cookieAcceptPolicy = .always
        for cookie in settings.cookies.compactMap(CookieJarFile.decode) { storage.setCookie(cookie) }
        storage.cookieAcceptPolicy =
            HTTPCookie.AcceptPolicy(rawValue: settings.cookieAcceptPolicy) ?? .onlyFromMainDocumentDomain
        return storage
    }

    private static func delegateQueue() -> OperationQueue {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        return queue
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

    /// The task's counters now (on the daemon's queue).
    func poll() -> AttemptProgress {
        let response = task.response
        var progress = AttemptProgress(
            newResponse: nil, received: task.countOfBytesReceived,
            expectedToReceive: task.countOfBytesExpectedToReceive, sent: task.countOfBytesSent,
            expectedToSend: task.countOfBytesExpectedToSend)
        if let response, response !== polledResponse {
            polledResponse = response
            progress.newResponse = response
        }
        return progress
    }

    // MARK: - Outcome and challenges (on the attempt's delegate queue)

    /// The task ended. The daemon decides on its queue while this waits, because Courier deletes a finished
    /// download's `location` when this returns: the daemon links the file to its lasting name, journals the outcome
    /// that names it, then lets this return. Nothing on the daemon's queue waits for this queue, so the wait cannot
    /// deadlock.
    private func ended(location: URL?, response: URLResponse?, body: Data? = nil, error: (any Error)?) {
        var file = location
        // An upload's response body, for the app's `didReceive` data.
        if let body, !body.isEmpty, error == nil, Self.writePrivately(body, to: finishedFile) { file = finishedFile }
        let failure = error.map { ($0 as? URLError) ?? URLError(.unknown) }
        queue.sync {
            observer?.attemptEnded(key, attempt: self, response: response, file: file, error: failure)
        }
    }

    /// Writes `data` to a new file at `url` (0600, replacing one left by an earlier attempt).
    private static func writePrivately(_ data: Data, to url: URL) -> Bool {
        unlink(url.path)
        let descriptor = open(url.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        return data.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else { return false }
                offset += written
            }
            return true
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
}
