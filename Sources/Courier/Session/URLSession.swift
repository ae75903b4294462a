import CourierHTTP
import CourierTransport
import Foundation
import Logging
import NIOConcurrencyHelpers
import Synchronization

/// An object that coordinates a group of related network data transfer tasks — Apple's `URLSession`, on
/// SwiftNIO.
///
/// A session copies its configuration when it is created, holds its delegate strongly until it is
/// invalidated, and calls the delegate and every completion handler on its ``delegateQueue``, one call at a
/// time, in order.
open class URLSession: NSObject, @unchecked Sendable {
    /// The shared session: default configuration, no delegate. Invalidating it does nothing.
    open class var shared: URLSession { sharedSession }

    private static let sharedSession: URLSession = URLSession(
        configuration: .default,
        delegate: nil,
        delegateQueue: nil,
        isShared: true
    )

    private let storedConfiguration: URLSessionConfiguration
    private let delegateBox: Mutex<(any URLSessionDelegate)?>
    private let descriptionBox = Mutex<String?>(nil)
    /// The queue on which delegate methods and completion handlers run.
    open var delegateQueue: OperationQueue { dispatcher.queue }
    let isShared: Bool
    let dispatcher: DelegateDispatcher
    let registry = TaskRegistry()
    /// The session's tracer, metrics and logger (see ``CourierTelemetry``).
    let telemetry: SessionTelemetry
    /// Why no task of this session can run, read once from the configuration (a proxy setting Courier cannot honour).
    let configurationFailure: TransferError?
    /// A background session's connection to `courierd`, which runs its tasks; `nil` for other sessions.
    let backgroundClient: BackgroundSessionClient?

    /// Why a background session could not attach to `courierd` when it was made (another process holds the
    /// session, no daemon could start), or `nil`: its tasks then fail, and no event ever comes.
    package var backgroundAttachFailure: TransferError? { backgroundClient?.failure }
    /// Asks the delegate about new TLS connections (sessions with a delegate only).
    let trustEvaluator: SessionTrustEvaluator?
    /// What every task's engine runs on, made once (see ``SessionEnvironment``); the session's transport, TLS
    /// settings, stage settings and the rest are read from it.
    let engineEnvironment: SessionEnvironment

    /// The network the session's tasks run on (a fake in engine tests).
    var transport: any Transport { engineEnvironment.transport }
    var logger: Logger { engineEnvironment.logger }
    /// TLS settings derived once from the configuration (it never changes after the session is created).
    var tlsSettings: TLSSettings { engineEnvironment.tls }
    /// What the request stages read from the configuration, read once (see ``StageSettings``).
    var stageSettings: StageSettings { engineEnvironment.stageSettings }
    /// The Basic protection spaces this session authenticated in (preemptive credentials).
    var authenticatedSpaces: AuthenticatedSpaces { engineEnvironment.authenticatedSpaces }
    /// Without a delegate, the storage whose default identity a connection presents when a server asks for a client
    /// certificate (with one, the delegate is asked instead).
    var identityStorage: URLCredentialStorage? { engineEnvironment.identityStorage }

    /// A copy of the configuration the session was created with: changing it does not change the session.
    ///
    /// The shared session's `protocolClasses` start with the classes registered with `URLProtocol.registerClass(_:)`
    /// at the time of the call (most recent first), which it consults, as Darwin's does: a session made with this
    /// copy consults them too.
    open var configuration: URLSessionConfiguration {
        let copy = storedConfiguration.copy() as? URLSessionConfiguration ?? storedConfiguration
        if isShared {
            copy.protocolClasses = URLProtocol.registeredClasses + (copy.protocolClasses ?? [])
        }
        return copy
    }

    /// The session's delegate; `nil` after the session became invalid.
    open var delegate: (any URLSessionDelegate)? { delegateBox.withLock { $0 } }

    /// A description of the session, for debugging.
    open var sessionDescription: String? {
        get { descriptionBox.withLock { $0 } }
        set { descriptionBox.withLock { $0 = newValue } }
    }

    /// Creates a session with `configuration` and no delegate.
    public convenience init(configuration: URLSessionConfiguration) {
        self.init(configuration: configuration, delegate: nil, delegateQueue: nil, isShared: false)
    }

    /// Creates a session. A `nil` queue means a new serial `OperationQueue`.
    public convenience init(
        configuration: URLSessionConfiguration,
        delegate: (any URLSessionDelegate)?,
        delegateQueue queue: OperationQueue?
    ) {
        self.init(configuration: configuration, delegate: delegate, delegateQueue: queue, isShared: false)
    }

    /// Creates a session whose tasks run on `transport` instead of the network (engine tests use a fake).
    package convenience init(
        configuration: URLSessionConfiguration,
        delegate: (any URLSessionDelegate)?,
        delegateQueue queue: OperationQueue?,
        transport: any Transport
    ) {
        self.init(
            configuration: configuration, delegate: delegate, delegateQueue: queue, isShared: false,
            transport: transport)
    }

    private init(
        configuration: URLSessionConfiguration,
        delegate: (any URLSessionDelegate)?,
        delegateQueue queue: OperationQueue?,
        isShared: Bool,
        transport: (any Transport)? = nil
    ) {
        let copied = configuration.copy() as? URLSessionConfiguration ?? configuration
        self.storedConfiguration = copied
        self.delegateBox = Mutex(delegate)
        self.isShared = isShared
        self.dispatcher = DelegateDispatcher(queue: queue)
        let telemetry = SessionTelemetry(options: copied.courierTelemetry)
        self.telemetry = telemetry
        self.configurationFailure = Self.configurationFailure(copied)
        self.backgroundClient =
            isShared
            ? nil
            : copied.identifier.map {
                BackgroundSessionClient(
                    identifier: $0, environment: copied.backgroundEnvironment ?? ProcessInfo.processInfo.environment,
                    launch: BackgroundLaunch(
                        command: copied.courierBackgroundLaunchCommand,
                        sendsLaunchEvents: copied.sessionSendsLaunchEvents))
            }
        let trustEvaluator =
            delegate == nil
            ? nil
            : SessionTrustEvaluator(
                additionalTrustedCertificates: copied.courierAdditionalTrustedCertificates,
                credentialStorage: copied.urlCredentialStorage)
        self.trustEvaluator = trustEvaluator
        self.engineEnvironment = SessionEnvironment(
            configuration: copied,
            stageSettings: StageSettings(copied, consultsRegisteredProtocols: isShared),
            transport: transport
                ?? HTTPTransport(
                    configuration: .init(
                        maximumConnectionsPerHost: copied.httpMaximumConnectionsPerHost,
                        poolObserver: Self.poolObserver(telemetry.metrics)),
                    logger: telemetry.logger
                ),
            tls: TransportRequestBuilder.tlsSettings(copied),
            authenticatedSpaces: AuthenticatedSpaces(),
            trustEvaluator: trustEvaluator,
            clientCertificateProvider: trustEvaluator,
            identityStorage: delegate == nil ? copied.urlCredentialStorage : nil,
            logger: telemetry.logger,
            telemetry: telemetry.isActive ? telemetry : nil
        )
        super.init()
        trustEvaluator?.attach(self)
        backgroundClient?.attach(to: self)
        // Partial files of resume data never used would otherwise stay forever.
        DownloadDirectory.sweepInBackground(copied.courierDownloadDirectory)
    }

    /// The pool gauges' feed, when the session records metrics.
    private static func poolObserver(_ metrics: SessionMetrics?) -> (@Sendable (PoolStatistics) -> Void)? {
        guard let metrics else { return nil }
        return { metrics.poolChanged($0) }
    }

    /// Why the configuration keeps every task from running, if it does.
    private static func configurationFailure(_ configuration: URLSessionConfiguration) -> TransferError? {
        if let setting = configuration.unsupportedProxySetting {
            return .unsupportedURL(
                "connectionProxyDictionary enables \(setting), which Courier cannot honour yet (proxy "
                    + "auto-configuration); the request is not sent directly instead")
        }
        return nil
    }

    deinit {
        backgroundClient?.detach()
    }

    /// The configuration as the session uses it (not a copy; never mutated).
    var sessionConfiguration: URLSessionConfiguration { storedConfiguration }

    // MARK: - Invalidation

    /// Lets running tasks finish, refuses new ones, then calls `urlSession(_:didBecomeInvalidWithError:)`.
    /// Does nothing on ``shared``.
    open func finishTasksAndInvalidate() {
        guard !isShared else { return }
        if registry.invalidate() {
            becomeInvalid()
        }
    }

    /// Cancels every task, refuses new ones, then calls `urlSession(_:didBecomeInvalidWithError:)`.
    /// Does nothing on ``shared``.
    open func invalidateAndCancel() {
        guard !isShared else { return }
        let becameEmpty = registry.invalidate()
        for task in registry.allTasks() {
            task.cancel()
        }
        if becameEmpty {
            becomeInvalid()
        }
    }

    /// Called when the last task of an invalidated session ended.
    func becomeInvalid() {
        transport.shutdown()
        // A background session's identifier is free for a new session once this one is invalid.
        backgroundClient?.detach()
        // Without a delegate there is no one to tell (and no reason to make the delegate queue).
        guard delegateBox.withLock({ $0 != nil }) else { return }
        dispatcher.async { [self] in
            delegate?.urlSession(self, didBecomeInvalidWithError: nil)
            // The session releases its delegate once the delegate was told.
            delegateBox.withLock { $0 = nil }
        }
    }

    // MARK: - Task lists

    /// The tasks a session lists, as Darwin does: resumed at least once, and neither cancelled nor completed.
    private func outstandingTasks() -> [URLSessionTask] {
        registry.allTasks().filter(\.isOutstanding)
    }

    /// Calls `completionHandler` on the delegate queue with the session's outstanding tasks (resumed at least
    /// once, not cancelled, not completed), by kind.
    open func getTasksWithCompletionHandler(
        _ completionHandler:
            @escaping @Sendable ([URLSessionDataTask], [URLSessionUploadTask], [URLSessionDownloadTask])
            -> Void
    ) {
        let tasks = outstandingTasks()
        dispatcher.async {
            let uploads = tasks.compactMap { $0 as? URLSessionUploadTask }
            let data = tasks.compactMap { $0 as? URLSessionDataTask }.filter { !($0 is URLSessionUploadTask) }
            let downloads = tasks.compactMap { $0 as? URLSessionDownloadTask }
            completionHandler(data, uploads, downloads)
        }
    }

    /// Calls `completionHandler` on the delegate queue with all outstanding tasks (resumed at least once, not
    /// cancelled, not completed).
    open func getAllTasks(completionHandler: @escaping @Sendable ([URLSessionTask]) -> Void) {
        let tasks = outstandingTasks()
        dispatcher.async { completionHandler(tasks) }
    }

    /// The session's outstanding tasks (resumed at least once, not cancelled, not completed).
    open var allTasks: [URLSessionTask] {
        get async { outstandingTasks() }
    }

    /// The session's outstanding tasks, by kind.
    open var tasks: ([URLSessionDataTask], [URLSessionUploadTask], [URLSessionDownloadTask]) {
        get async {
            let tasks = outstandingTasks()
            let uploads = tasks.compactMap { $0 as? URLSessionUploadTask }
            let data = tasks.compactMap { $0 as? URLSessionDataTask }.filter { !($0 is URLSessionUploadTask) }
            let downloads = tasks.compactMap { $0 as? URLSessionDownloadTask }
            return (data, uploads, downloads)
        }
    }

    /// Empties the cookies, credentials and cached responses of the session's storages, forgets the protection
    /// spaces it sent credentials to, and closes idle connections so that later requests start on new ones; then
    /// calls `completionHandler` on the delegate queue. Tasks already running go on; their connections take no new
    /// request and close when those tasks' requests end.
    ///
    /// As on Darwin the storages are the configuration's, so sessions sharing them (the shared ones, by default)
    /// lose their contents too. The work runs on a background queue: storages may be the app's subclasses.
    open func reset(completionHandler: @escaping @Sendable () -> Void) {
        let configuration = storedConfiguration
        DispatchQueue.global().async { [self] in
            transport.closeIdleConnections()
            authenticatedSpaces.removeAll()
            configuration.urlCache?.removeAllCachedResponses()
            if let storage = configuration.httpCookieStorage {
                for cookie in storage.cookies ?? [] { storage.deleteCookie(cookie) }
                storage.flushToDisk()
            }
            if let storage = configuration.urlCredentialStorage {
                for (space, credentials) in storage.allCredentials {
                    for credential in credentials.values { storage.remove(credential, for: space) }
                }
            }
            dispatcher.async { completionHandler() }
        }
    }

    /// Writes the session's cookies to disk and closes idle connections so that later requests start on new
    /// ones (busy connections close when their requests end); then calls `completionHandler` on the delegate queue.
    /// (The disk cache writes as it goes.)
    open func flush(completionHandler: @escaping @Sendable () -> Void) {
        let cookies = storedConfiguration.httpCookieStorage
        DispatchQueue.global().async { [self] in
            transport.closeIdleConnections()
            cookies?.flushToDisk()
            dispatcher.async { completionHandler() }
        }
    }

    /// Empties the session's storages and closes idle connections (see ``reset(completionHandler:)``).
    open func reset() async {
        await withCheckedContinuation { continuation in reset { continuation.resume() } }
    }

    /// Writes cookies to disk and closes idle connections (see ``flush(completionHandler:)``).
    open func flush() async {
        await withCheckedContinuation { continuation in flush { continuation.resume() } }
    }

    // MARK: - Data tasks

    /// Creates a data task for `request`; events go to the delegate.
    open func dataTask(with request: URLRequest) -> URLSessionDataTask {
        register { URLSessionDataTask(session: self, request: request, identifier: $0, completionMode: .delegate) }
    }

    /// Creates a data task for a GET of `url`; events go to the delegate.
    open func dataTask(with url: URL) -> URLSessionDataTask {
        dataTask(with: URLRequest(url: url))
    }

    /// Creates a data task whose outcome goes to `completionHandler` on the delegate queue.
    open func dataTask(
        with request: URLRequest,
        completionHandler: @escaping @Sendable (Data?, URLResponse?, (any Error)?) -> Void
    ) -> URLSessionDataTask {
        register {
            URLSessionDataTask(
                session: self,
                request: request,
                identifier: $0,
                completionMode: .dataHandler(HandlerSlot(completionHandler))
            )
        }
    }

    /// Creates a data task for a GET of `url` whose outcome goes to `completionHandler`.
    open func dataTask(
        with url: URL,
        completionHandler: @escaping @Sendable (Data?, URLResponse?, (any Error)?) -> Void
    ) -> URLSessionDataTask {
        dataTask(with: URLRequest(url: url), completionHandler: completionHandler)
    }

    // MARK: - Upload tasks

    /// Creates a task that uploads `bodyData` with `request` (whose own body is ignored).
    open func uploadTask(with request: URLRequest, from bodyData: Data) -> URLSessionUploadTask {
        makeUpload(request, body: .data(bodyData), mode: .delegate)
    }

    /// Creates a task that uploads `bodyData`; its outcome goes to `completionHandler`.
    open func uploadTask(
        with request: URLRequest,
        from bodyData: Data?,
        completionHandler: @escaping @Sendable (Data?, URLResponse?, (any Error)?) -> Void
    ) -> URLSessionUploadTask {
        makeUpload(request, body: .data(bodyData ?? Data()), mode: .dataHandler(HandlerSlot(completionHandler)))
    }

    /// Creates a task that uploads the file at `fileURL`, streamed from disk.
    open func uploadTask(with request: URLRequest, fromFile fileURL: URL) -> URLSessionUploadTask {
        makeUpload(request, body: .file(fileURL), mode: .delegate)
    }

    /// Creates a task that uploads the file at `fileURL`; its outcome goes to `completionHandler`.
    open func uploadTask(
        with request: URLRequest,
        fromFile fileURL: URL,
        completionHandler: @escaping @Sendable (Data?, URLResponse?, (any Error)?) -> Void
    ) -> URLSessionUploadTask {
        makeUpload(request, body: .file(fileURL), mode: .dataHandler(HandlerSlot(completionHandler)))
    }

    /// Creates a task whose body comes from the stream the delegate gives in `needNewBodyStream`, asked for the
    /// first pass and again whenever the body must be sent again.
    open func uploadTask(withStreamedRequest request: URLRequest) -> URLSessionUploadTask {
        makeUpload(request, body: .streamed, mode: .delegate)
    }

    // MARK: - Download tasks

    /// Creates a download task for `request`.
    open func downloadTask(with request: URLRequest) -> URLSessionDownloadTask {
        register { URLSessionDownloadTask(session: self, request: request, identifier: $0, completionMode: .delegate) }
    }

    /// Creates a download task for a GET of `url`.
    open func downloadTask(with url: URL) -> URLSessionDownloadTask {
        downloadTask(with: URLRequest(url: url))
    }

    /// Creates a download task whose outcome goes to `completionHandler`.
    open func downloadTask(
        with request: URLRequest,
        completionHandler: @escaping @Sendable (URL?, URLResponse?, (any Error)?) -> Void
    ) -> URLSessionDownloadTask {
        register {
            URLSessionDownloadTask(
                session: self,
                request: request,
                identifier: $0,
                completionMode: .downloadHandler(HandlerSlot(completionHandler))
            )
        }
    }

    /// Creates a download task for a GET of `url` whose outcome goes to `completionHandler`.
    open func downloadTask(
        with url: URL,
        completionHandler: @escaping @Sendable (URL?, URLResponse?, (any Error)?) -> Void
    ) -> URLSessionDownloadTask {
        downloadTask(with: URLRequest(url: url), completionHandler: completionHandler)
    }

    /// Creates a download task that resumes from `resumeData` (as produced by `cancel(byProducingResumeData:)`
    /// or found in a failed download's error). Invalid resume data makes the task fail when resumed.
    open func downloadTask(withResumeData resumeData: Data) -> URLSessionDownloadTask {
        makeResumedDownload(resumeData, mode: .delegate)
    }

    /// Creates a download task that resumes from `resumeData`; its outcome goes to `completionHandler`.
    open func downloadTask(
        withResumeData resumeData: Data,
        completionHandler: @escaping @Sendable (URL?, URLResponse?, (any Error)?) -> Void
    ) -> URLSessionDownloadTask {
        makeResumedDownload(resumeData, mode: .downloadHandler(HandlerSlot(completionHandler)))
    }

    // MARK: - Stream and WebSocket tasks

    /// Creates a stream task to `hostname`:`port`.
    open func streamTask(withHostName hostname: String, port: Int) -> URLSessionStreamTask {
        register { URLSessionStreamTask(session: self, hostName: hostname, port: port, identifier: $0) }
    }

    /// Creates a WebSocket task for `url`.
    open func webSocketTask(with url: URL) -> URLSessionWebSocketTask {
        webSocketTask(with: URLRequest(url: url))
    }

    /// Creates a WebSocket task for `url` offering `protocols` (none: no `Sec-WebSocket-Protocol` field).
    open func webSocketTask(with url: URL, protocols: [String]) -> URLSessionWebSocketTask {
        var request = URLRequest(url: url)
        // The field lists one or more subprotocols (RFC 6455 §4.3, `1#token`): an empty one is not sent, as servers
        // may refuse the handshake over it.
        if !protocols.isEmpty {
            request.setValue(protocols.joined(separator: ", "), forHTTPHeaderField: "Sec-WebSocket-Protocol")
        }
        return webSocketTask(with: request)
    }

    /// Creates a WebSocket task for `request`.
    open func webSocketTask(with request: URLRequest) -> URLSessionWebSocketTask {
        register {
            URLSessionWebSocketTask(session: self, request: request, identifier: $0, completionMode: .delegate)
        }
    }
}
