import CourierHTTP
import CourierTransport
import Foundation
import Instrumentation
import Logging
import NIOCore
import NIOFoundationCompat
import NIOPosix

/// Runs one task: steps its ``TransferMachine`` on a serial ``EngineExecutor`` and performs the actions the
/// machine returns — running the ``StageChain``, starting and pausing the ``ResponseSource``, writing the download
/// file, and emitting ``TaskEvent``s to its sink.
///
/// The engine knows no delegate protocol and calls no user code: it talks to the app only through events and
/// the answers to ``TaskDecision``s. Every public method may be called from any thread; each becomes a job on the
/// executor. The properties below the executor are confined to it (that is why the class is `@unchecked
/// Sendable`: no two jobs run at once, and no job runs under a lock).
///
/// Reading order for a data task: ``start()`` → ``TransferMachine/start(delayed:)`` → `.prepare` →
/// ``StageChain/runRequestSide(_:stages:context:)`` → `.startSource` (``NetworkSource`` → the
/// transport) → `head` → ``StageChain/runResponseSide(_:stages:context:)`` → `.deliverHead`,
/// `.deliver`, `.deliverEnd` → `.complete` → ``TaskEvent/completed(_:)`` → ``TaskEventAdapter``.
final class TaskEngine: TaskDecider, @unchecked Sendable {
    /// What the task is.
    struct Spec: Sendable {
        enum Kind: Sendable {
            case data
            /// Indirect, as the cases below: every engine would otherwise carry room for the largest payload.
            indirect case upload(UploadBody)
            /// Indirect: the resume state is large and rare, and every engine would otherwise carry its room.
            indirect case download(resume: DownloadResumeState?)
            /// A WebSocket task's opening handshake: the request asks to take its connection over, which the
            /// transport leaves in the upgrade's slot when the server switches protocols.
            indirect case webSocket(WebSocketUpgrade)
        }

        /// The request the task starts with; its storage is shared with the task object, which keeps it as its
        /// original request (`URLRequest` copies share their properties until one changes).
        let request: URLRequest
        /// The task's identifier, for logs.
        var taskIdentifier: Int
        var kind: Kind
        var earliestBeginDate: Date?
        var asksForRedirects: Bool
        var asksForResponses: Bool
        /// Out of line: rare, and as large as the rest of the spec's scalars together.
        private var storedFailure: OutOfLine<TransferError>

        init(
            request: URLRequest, taskIdentifier: Int, kind: Kind, earliestBeginDate: Date?, failure: TransferError?,
            asksForRedirects: Bool, asksForResponses: Bool
        ) {
            self.request = request
            self.taskIdentifier = taskIdentifier
            self.kind = kind
            self.earliestBeginDate = earliestBeginDate
            self.storedFailure = OutOfLine(failure)
            self.asksForRedirects = asksForRedirects
            self.asksForResponses = asksForResponses
        }

        /// The task cannot run at all (an invalidated session, an unsupported task kind): it fails at start.
        var failure: TransferError? { storedFailure.value }
    }

    /// What the engine runs on: the session's shared ``SessionEnvironment`` and the task's own parts.
    struct Environment: Sendable {
        /// What every task of the session shares.
        let session: SessionEnvironment
        /// The service context where the task was made, the parent of its span.
        var creationContext: ServiceContext? = nil
        /// One of NIO's shared event loops: it schedules the `earliestBeginDate` timer, and a download's file queue
        /// reports through it (see `makeDownloadSink`). Each read may give another loop.
        var timerLoop: any EventLoop { MultiThreadedEventLoopGroup.singleton.any() }
        /// Holds the resource deadline: the process's (not stored: every queued task's engine would carry it).
        var deadlines: DeadlineScheduler { .shared }
        /// The task object, for `URLProtocol.canInit(with:)`.
        let task: URLSessionTask?
        /// The task's side: whether the app has it suspended, and new body streams (`needNewBodyStream`). A
        /// reference rather than closures, so that making an engine allocates less.
        let host: any TaskHost

        var configuration: URLSessionConfiguration { session.configuration }
        var stageSettings: StageSettings { session.stageSettings }
        var transport: any Transport { session.transport }
        var tls: TLSSettings { session.tls }
        var authenticatedSpaces: AuthenticatedSpaces { session.authenticatedSpaces }
        var identityStorage: URLCredentialStorage? { session.identityStorage }
        var logger: Logger { session.logger }
        var telemetry: SessionTelemetry? { session.telemetry }
    }

    /// A unit of work on the executor. The frequent ones — a response's head, parts, end and timeline — are values,
    /// so that handing them over allocates nothing; the rest are closures.
    enum Job: Sendable {
        case run(@Sendable () -> Void)
        case start
        case head(URLResponse, attempt: Int)
        case part(ByteBuffer, attempt: Int)
        case end(attempt: Int)
        case failed(TransferError, attempt: Int)
        case timeline(TransportTimeline, attempt: Int)
    }

    private let executor = EngineExecutor<Job>()
    let spec: Spec
    let environment: Environment
    /// Held strongly until the task completes, so that the adapter lives as long as the transfer.
    private var sink: (any TaskEventSink)?

    // MARK: Confined to `executor`

    private var machine = TransferMachine<ByteBuffer>()
    /// The request the task is loading: the spec's until a redirect, a resume or the app replaces it (kept out of
    /// line only then, so that an engine does not carry a second copy of the request inline).
    private var request: URLRequest {
        get { replacedRequest.value ?? spec.request }
        set { replacedRequest.value = newValue }
    }
    private var replacedRequest = OutOfLine<URLRequest>()
    private var pendingResponse: URLResponse?
    private var response: URLResponse?
    private var source: (any ResponseSource)?
    private var preparedSource: (any ResponseSource)?
    /// The `Authorization` field of the request the network source sends (see ``StageContext/sentAuthorization``).
    private var sentAuthorization: String?
    /// The task's transactions, when its sink collects metrics (`nil`: nothing is recorded).
    private var transactions: [TransactionRecord]?
    /// The task's HTTP caching, made at the first attempt when the session has a `urlCache` (not for downloads).
    private var cacheTransaction: CacheTransaction?
    private var madeCacheTransaction = false
    /// The accepted response's body, collected for the cache; behind a reference, as it is large and most tasks
    /// have none.
    private var cacheRecording: RecordingBox?
    /// For a data task whose request asks to upgrade: the slot a switched connection is left in, for
    /// `.becomeStream`.
    let dataUpgrade: ConnectionUpgrade?
    private var bodyState = TransportRequestBuilder.BodyState()
    /// The task's span and metrics, when the session's telemetry is active.
    private var telemetry: TaskTelemetry?
    /// The session logger's level, read once: asking a logger copies its handler out of the existential, and every
    /// job would ask. Only when it lets debug lines out does the engine keep a logger of its own (``debugLogger``).
    private let logLevel: Logger.Level
    private var resourceClock: ResourceClock
    private var completed = false
    var receivedBytes: Int64 = 0
    var expectedToReceive: Int64 = NSURLSessionTransferSizeUnknown
    /// Download tasks stream the body into a file.
    var download: DownloadSink?
    /// What few tasks need (redirects, authentication, decisions, delays, resumes), made at its first write.
    var rareState: RareState?

    init(spec: Spec, environment: Environment, sink: any TaskEventSink) {
        if case .data = spec.kind, spec.request.value(forHTTPHeaderField: "Upgrade") != nil {
            dataUpgrade = ConnectionUpgrade()
        } else {
            dataUpgrade = nil
        }
        self.spec = spec
        self.environment = environment
        self.sink = sink
        let logger = environment.logger
        self.logLevel = logger.logLevel
        self.resourceClock = ResourceClock(timeout: Self.timeAmount(environment.stageSettings.resourceTimeout))
        if logLevel <= .debug {
            var taskLogger = logger
            taskLogger[metadataKey: "courier.task"] = "\(spec.taskIdentifier)"
            debugLogger = taskLogger
        }
    }

    // MARK: - Control (any thread)

    /// The first `resume()`.
    func start() {
        submit(.start)
    }

    /// What the resource clock runs when the task's time is up. Strong, with no weak reference anywhere on the hot
    /// path (a weak reference gives the object a side table, which makes every retain and release of it slow):
    /// `complete` stops the clock, which removes the scheduler's entry, so nothing outlives the task. A closure that
    /// captures only the engine allocates no context.
    private var resourceDeadlinePassed: @Sendable () -> Void {
        { [self] in
            onExecutor { [self] in
                guard !endWhileTheAppDecides(.timedOut("the resource timeout expired")) else { return }
                step { $0.resourceTimerFired() }
            }
        }
    }

    private func begin() {
        // Cancelled between resume() and this job: nothing may be claimed or started any more.
        guard case .idle = machine.phase else { return }
        if sink?.collectsMetrics == true { transactions = [] }
        if let sessionTelemetry = environment.telemetry {
            var isDownload = false
            if case .download = spec.kind { isDownload = true }
            let started = TaskTelemetry(
                session: sessionTelemetry, request: request, parent: environment.creationContext ?? .topLevel,
                isDownload: isDownload)
            if logLevel <= .debug, let traceID = started.traceID {
                debugLogger?[metadataKey: "trace_id"] = "\(traceID)"
            }
            telemetry = started
        }
        if let failure = spec.failure {
            step { $0.failed(failure) }
            return
        }
        if case .download(let resumeState) = spec.kind {
            if let resumeState {
                guard let resumed = prepareResume(resumeState, request: request) else { return }
                request = resumed
            }
            download = makeDownloadSink()
        }
        let delayed = spec.earliestBeginDate.map { $0.timeIntervalSinceNow > 0 } ?? false
        step { $0.start(delayed: delayed) }
    }

    /// `suspend()` or `resume()` changed the task's state. The job reads the state as it is when it runs, so that
    /// calls from two threads that reach the executor in the other order still end in the latest state.
    func suspensionChanged() {
        onExecutor { [self] in
            let suspended = environment.host.isSuspended
            step { suspended ? $0.suspend() : $0.resume() }
        }
    }

    func cancel(producingResumeData: Bool = false) {
        onExecutor { [self] in
            guard !endWhileTheAppDecides(.cancelled()) else { return }
            step { $0.cancel(producingResumeData: producingResumeData) }
        }
    }

    /// A consumer's buffer filled up or drained. The job asks the consumers what they want when it runs (not what
    /// they wanted when they called), so signals that reach the executor out of order cannot leave it paused.
    func backpressureChanged() {
        onExecutor { [self] in refreshBackpressure() }
    }

    /// Pauses the source while a consumer is full or a multipart part's response waits for the app.
    private func refreshBackpressure() {
        let wanted =
            (sink?.wantsSourcePaused ?? false) || (download?.isPaused ?? false) || (multipart?.isDeciding ?? false)
        step { $0.backpressure(wanted) }
    }

    /// The app answered the pending ``TaskDecision``.
    func answer(_ answer: TaskDecisionAnswer) {
        onExecutor { [self] in
            if case .beginDelayedRequest(let disposition, let newRequest) = answer, awaitingBegin {
                awaitingBegin = false
                switch disposition {
                case .continueLoading:
                    step { $0.beginAnswered() }
                case .useNewRequest:
                    if let newRequest { setRequest(newRequest) }
                    step { $0.beginAnswered() }
                case .cancel:
                    step { $0.cancel() }
                }
                return
            }
            let waiting = pendingDecision
            pendingDecision = nil
            waiting?.resume(returning: answer)
        }
    }

    // MARK: - Stepping

    /// Feeds one event to the machine and performs its actions, in order. Only ever called on the executor.
    private func step(_ event: (inout TransferMachine<ByteBuffer>) -> TransferMachine<ByteBuffer>.Actions) {
        let actions = event(&machine)
        for action in actions { perform(action) }
    }

    /// Runs `job` on the executor after the current job (never nested inside it); also for the download file's
    /// callbacks, which come from its I/O queue.
    func later(_ job: @escaping @Sendable (TaskEngine) -> Void) {
        onExecutor { [self] in job(self) }
    }

    private func perform(_ action: TransferMachine<ByteBuffer>.Action) {
        switch action {
        case .armBeginTimer:
            let delay = spec.earliestBeginDate?.timeIntervalSinceNow ?? 0
            beginTimer = environment.timerLoop.scheduleTask(in: Self.beginTimerDelay(delay)) { [self] in
                onExecutor { [self] in step { $0.beginTimerFired() } }
            }
        case .askToBegin:
            awaitingBegin = true
            emit(.decide(.beginDelayedRequest(request)))
        case .startResourceClock:
            // Strong, with no weak reference anywhere on the hot path (a weak reference gives the object a side
            // table, which makes every retain and release of it slow): `complete` stops the clock, which removes
            // the entry, so nothing outlives the task.
            resourceClock.start(on: environment.deadlines, onExpiry: resourceDeadlinePassed)
        case .pauseResourceClock:
            resourceClock.pause(on: environment.deadlines)
        case .resumeResourceClock:
            resourceClock.resume(on: environment.deadlines, onExpiry: resourceDeadlinePassed)
        case .prepare(let attempt):
            prepare(attempt: attempt)
        case .startSource(let attempt):
            source = preparedSource
            preparedSource = nil
            if let source, let telemetry {
                telemetry.sourceStarted(source.origin, cacheInUse: cacheTransaction != nil)
            }
            if let source, transactions != nil {
                // The metrics show the request as `currentRequest` does: without an answered credential.
                transactions?.append(
                    TransactionRecord(
                        attempt: attempt, request: visibleRequest(request), origin: source.origin,
                        fetchStart: Date()))
            }
            source?.start(
                AttemptConsumer(
                    engine: self, attempt: attempt,
                    observesTimelines: observesTimelines))
        case .pauseSource:
            source?.pause()
        case .resumeSource:
            source?.resume()
        case .runResponseSide(let attempt):
            runResponseSide(attempt: attempt)
        case .deliverHead:
            deliverHead()
        case .deliver(let part):
            deliver(part)
        case .deliverEnd:
            deliverEnd()
        case .drainSource:
            let draining = source
            source = nil
            guard let draining else {
                later { engine in engine.step { $0.drained() } }
                return
            }
            draining.drain { [self] in onExecutor { [self] in step { $0.drained() } } }
        case .cancelSource:
            source?.cancel()
            source = nil
        case .complete(let outcome):
            complete(outcome)
        }
    }

    // MARK: - Request side

    private func prepare(attempt: Int) {
        debug(
            "preparing request",
            metadata: [
                "task": "\(spec.taskIdentifier)", "attempt": "\(attempt)",
                "url": "\(LogRedaction.url(request.url))",
            ])
        switch StageChain.runRequestSide(request, context: makeContext()) {
        case .done(let result):
            // Still inside this job: `.prepare` is always the last action of its step, so the outcome can be
            // stepped at once (no job, and nothing queued meanwhile can overtake it).
            requestSideDone(result, attempt: attempt)
        case .waits(let rest):
            rest { [self] result in onExecutor { [self] in requestSideDone(result, attempt: attempt) } }
        }
    }

    private func requestSideDone(_ result: Result<RequestStep, TransferError>, attempt: Int) {
        guard machine.attempt == attempt, !machine.isOver else { return }
        switch result {
        case .failure(let error):
            step { $0.failed(attempt: attempt, error) }
        case .success(.respond(let answering)):
            sentAuthorization = nil
            preparedSource = answering
            step { $0.prepared(attempt: attempt) }
        case .success(.proceed(let prepared)):
            sentAuthorization = prepared.value(forHTTPHeaderField: "Authorization")
            do {
                var isWebSocket = false
                if case .webSocket = spec.kind { isWebSocket = true }
                // A data task that asks to upgrade may take the switched connection over (`.becomeStream`).
                let upgradesData =
                    dataUpgrade != nil
                    && prepared.headerFields.contains { HeaderName.equal($0.name, "Upgrade") }
                var transportRequest = try TransportRequestBuilder.make(
                    from: prepared,
                    upload: uploadBody,
                    settings: environment.stageSettings,
                    options: connectionOptions(for: prepared),
                    takesConnectionOver: isWebSocket || upgradesData,
                    body: bodyState,
                    bodyStreams: environment.host
                )
                if case .webSocket(let upgrade) = spec.kind { upgrade.apply(to: &transportRequest) }
                if let dataUpgrade, upgradesData {
                    transportRequest.upgrade = dataUpgrade
                    transportRequest.tls.applicationProtocols = .http1
                }
                telemetry?.inject(into: &transportRequest.headers)
                if !observesTimelines { transportRequest.observesTimeline = false }
                if logLevel <= .trace {
                    debugLogger?.trace(
                        "request head",
                        metadata: [
                            "head":
                                "\(LogRedaction.head("\(transportRequest.method) \(transportRequest.target)", fields: transportRequest.headers))"
                        ])
                }
                bodyState.sentBefore = true
                emit(.attemptStarted(expectedToSend: transportRequest.body.length ?? NSURLSessionTransferSizeUnknown))
                preparedSource = NetworkSource(request: transportRequest, transport: environment.transport)
            } catch {
                step { $0.failed(attempt: attempt, error) }
                return
            }
            step { $0.prepared(attempt: attempt) }
        }
    }

    /// The session's shared connection options, or a copy with the client identity the credential storage holds
    /// for the request's protection space.
    private func connectionOptions(for request: URLRequest) -> TransportRequest.ConnectionOptions {
        var options = environment.session.connectionOptions
        // Most requests find no identity: they keep sharing the session's options instead of copying them.
        if let tls = ClientCertificateCredentials.identitySettings(
            environment.tls, for: request.url ?? URL(fileURLWithPath: "/"), storage: environment.identityStorage)
        {
            options.tls = tls
        }
        if let evaluator = trustEvaluatorForTask() { options.trustEvaluator = evaluator }
        return options
    }

    /// In a session without a delegate, a task with a delegate of its own has that delegate asked about new TLS
    /// connections, as on Darwin (see ``TaskTrustEvaluator``): one evaluator for all the task's attempts, made at the
    /// first. `nil` otherwise (the session's evaluator, or NIOSSL's verification, decides).
    private func trustEvaluatorForTask() -> TaskTrustEvaluator? {
        if let made = taskTrustEvaluator { return made }
        guard environment.session.trustEvaluator == nil, let task = environment.task, task.delegate != nil else {
            return nil
        }
        let made = TaskTrustEvaluator(
            task: task,
            additionalTrustedCertificates: environment.configuration.courierAdditionalTrustedCertificates)
        taskTrustEvaluator = made
        return made
    }

    /// The upload task's body, until a redirect's rule dropped it (see ``TransportRequestBuilder/BodyState``): after
    /// a 303 the body is the request's own, if the delegate gave it one, not the upload's, which the request for
    /// another method and resource never asked to carry.
    private var uploadBody: UploadBody? {
        if case .upload(let body) = spec.kind, !bodyState.uploadDropped { return body }
        return nil
    }

    // MARK: - Response side

    private func runResponseSide(attempt: Int) {
        guard let response = pendingResponse else { return }
        if authentication == nil, let http = response as? HTTPURLResponse, AuthenticationStage.isChallenge(http) {
            authentication = AuthenticationState()
        }
        let facts = ResponseStageFacts(
            hasCookieStorage: environment.stageSettings.cookieStorage != nil,
            origin: source?.origin,
            hasProtocolRedirect: protocolRedirect != nil,
            authentication: authentication,
            caches: currentCacheTransaction() != nil,
            asksForResponses: asksForResponses
        )
        if StageChain.responseSidePasses(response, facts) {
            responseSideDone(.success(.proceed(response)), attempt: attempt)
            return
        }
        switch StageChain.runResponseSide(response, context: makeContext()) {
        case .done(let result):
            // Still inside this job, before any body part or failure that arrived meanwhile (they find the response
            // accepted). The step's later actions only pause or resume the source, which the machine's state
            // already accounts for.
            responseSideDone(result, attempt: attempt)
        case .waits(let rest):
            rest { [self] result in onExecutor { [self] in responseSideDone(result, attempt: attempt) } }
            later { engine in engine.step { $0.awaitingDecision(attempt: attempt) } }
        }
    }

    private func responseSideDone(_ result: Result<ResponseStep, TransferError>, attempt: Int) {
        guard machine.attempt == attempt, !machine.isOver else { return }
        switch result {
        case .failure(let error):
            step { $0.failed(attempt: attempt, error) }
        case .success(.followUp(let next, let dropsBody)):
            followUp(next, dropsBody: dropsBody, attempt: attempt)
        case .success(.retry(let next)):
            followUp(next, dropsBody: false, attempt: attempt, isRedirect: false)
        case .success(.proceedAsDownload(let accepted)):
            _ = cacheTransaction?.takeRecording()
            download = makeDownloadSink()
            emit(.becameDownload)
            accept(accepted, attempt: attempt)
        case .success(.proceed(let accepted)):
            cacheRecording = cacheTransaction?.takeRecording().map(RecordingBox.init)
            accept(accepted, attempt: attempt)
        case .success(.proceedAsStream(let response)):
            // The transport hands the connection over at the end of the 101 head, which the app may have answered
            // before the event loop got there: wait for it.
            guard let dataUpgrade, (response as? HTTPURLResponse)?.statusCode == 101 else {
                step {
                    $0.failed(
                        attempt: attempt,
                        .unsupportedURL(
                            "becomeStream needs a connection the server switched: a 101 answer to a request with an "
                                + "Upgrade field"))
                }
                return
            }
            // Weakly: the engine holds the slot, and a connection that dies between the head and its end never fills
            // it (the task fails through the source instead).
            dataUpgrade.whenFilled { [weak self] in
                self?.onExecutor { [weak self] in
                    guard let self, machine.attempt == attempt, !machine.isOver else { return }
                    // The adapter hands the connection to a new stream task; the data task ends without a
                    // completion.
                    emit(.becameStream)
                    step { $0.cancel() }
                }
            }
        }
    }

    private func followUp(_ next: URLRequest, dropsBody: Bool, attempt: Int, isRedirect: Bool = true) {
        let byProtocol = protocolRedirect != nil
        protocolRedirect = nil
        if isRedirect { redirectCount += 1 }
        if isRedirect, !byProtocol, let target = next.url, let current = request.url,
            RedirectPolicy.refusesRedirect(from: current, to: target)
        {
            // An HTTP redirect (followed by default or by the delegate) to a custom scheme, `file:` or `data:`: it
            // fails with `unsupportedURL`, as on Darwin, and the error's failing URL is the target (apps read an
            // OAuth callback's code from it). A custom `URLProtocol`'s own redirects are its business.
            setRequest(next)
            step {
                $0.failed(
                    attempt: attempt,
                    .unsupportedURL(
                        "the redirect leads to a \(target.scheme ?? "scheme-less") URL, which is not loaded: only "
                            + "http and https are followed"))
            }
            return
        }
        telemetry?.followedUp(to: next.url, isRedirect: isRedirect)
        if dropsBody {
            bodyState.dropped = true
            bodyState.uploadDropped = true
        }
        if isRedirect, next.httpBody != nil || next.httpBodyStream != nil {
            // The redirect's rule dropped the body, but the delegate's `willPerformHTTPRedirection` gave the new
            // request one (an app keeping a POST through a 302): Darwin sends the request it is given, body included.
            bodyState.dropped = false
        }
        if !isRedirect {
            // An authentication retry: the credential it carries is sent, never shown (see AnsweredCredentials).
            var answered = answeredCredentials ?? AnsweredCredentials()
            answered.record(from: request, to: next)
            answeredCredentials = answered
        }
        debug(
            "follow-up", metadata: ["task": "\(spec.taskIdentifier)", "url": "\(LogRedaction.url(next.url))"])
        setRequest(next)
        step { $0.followUp(attempt: attempt) }
    }

    private func accept(_ accepted: URLResponse, attempt: Int) {
        protocolRedirect = nil
        if download != nil, let http = accepted as? HTTPURLResponse, let retry = resumeRetry(for: http) {
            // The server cannot continue the partial file: ask again for the whole resource.
            followUp(retry, dropsBody: false, attempt: attempt)
            return
        }
        response = accepted
        step { $0.responseAccepted(attempt: attempt) }
    }

    private func deliverHead() {
        guard let response else { return }
        expectedToReceive = response.expectedBodyLength
        emit(.response(response))
        if download == nil {
            multipart = MultipartReplaceDelivery.make(for: response, asksForResponses: spec.asksForResponses)
            // A stream of replacing parts is not a document to cache.
            if multipart != nil { cacheRecording = nil }
        }
        if let download, let http = response as? HTTPURLResponse {
            openDownload(for: http, in: download)
        } else {
            download?.open()
        }
    }

    /// The largest part of a body copied into a `Data` of its own; a larger one is wrapped, not copied, and its
    /// `Data` keeps the whole read buffer it came in alive (up to 256 KiB) for as long as it is kept.
    static let largestCopiedPart = 16 * 1024

    private func deliver(_ part: ByteBuffer) {
        let count = part.readableBytes
        // Large parts are wrapped, not copied; NIO's `.automatic` would copy anything up to 256 KiB, which is every
        // read.
        let data = Data(buffer: part, byteTransferStrategy: count > Self.largestCopiedPart ? .noCopy : .copy)
        receivedBytes += Int64(count)
        if multipart != nil {
            do {
                performMultipart(try multipart!.feed(data))
            } catch {
                step { $0.failed(error) }
            }
            return
        }
        if let download {
            emit(.receivedToFile(count: count, total: receivedBytes))
            download.append(data)
        } else {
            cacheRecording?.recording.append(data)
            emit(.data(data))
        }
    }

    private func deliverEnd() {
        if multipart != nil {
            performMultipart(multipart!.finish())
            guard multipart?.isIdle == true else {
                multipartEndPending = true
                return
            }
            multipart = nil
        }
        guard let download else {
            // Nothing to close: the body is complete now. (`.deliverEnd` is followed at most by a pause or resume
            // of a source the completion has already let go of.) A body recorded for the cache is stored first, so
            // that `willCacheResponse` comes before the completion, as on Darwin.
            if let recording = cacheRecording?.recording, let cached = recording.cachedResponse,
                let cache = cacheTransaction?.cache
            {
                cacheRecording = nil
                store(cached, for: recording.request, in: cache)
            } else {
                step { $0.consumerClosed(nil) }
            }
            return
        }
        // A resumed range that ended short is a lost connection (the file is kept for resume data), never a
        // complete download.
        if let short = shortResumedRange() {
            step { $0.consumerClosed(short) }
            return
        }
        // The task completes once every byte reached the file.
        download.finish { [self] result in
            onExecutor { [self] in
                switch result {
                case .success(let file):
                    downloadedFile = file
                    step { $0.consumerClosed(nil) }
                case .failure(let error):
                    step { $0.consumerClosed(error) }
                }
            }
        }
    }

    /// The finished download's file.

    // MARK: - multipart/x-mixed-replace

    private func performMultipart(_ steps: [MultipartReplaceDelivery.Step]) {
        for next in steps {
            switch next {
            case .data(let data):
                emit(.data(data))
            case .response(let response):
                emit(.response(response))
            case .decide(let response):
                refreshBackpressure()
                Task(executorPreference: StageExecutor.shared) { [self] in
                    let answer = await decide(.response(response))
                    onExecutor { [self] in multipartPartAnswered(answer) }
                }
            }
        }
    }

    /// Ends the task with `error` if its body ended while the app still decides — about a multipart part's response,
    /// or `willCacheResponse`. The machine is finishing then and ignores a cancel or the resource timeout (the task
    /// is over as far as it knows), yet the task has not completed: as on Darwin, `cancel()` ends it with
    /// `URLError(.cancelled)` (not with success once the answer comes), and an app that never answers does not hold
    /// it past its resource timeout. A late answer is ignored (a cache answer stores nothing).
    private func endWhileTheAppDecides(_ error: TransferError) -> Bool {
        guard multipartEndPending || cacheDecisionPending, !completed else { return false }
        multipartEndPending = false
        cacheDecisionPending = false
        step { $0.consumerClosed(error) }
        return true
    }

    /// The app answered about a part's response: go on (allow; a part cannot become a download) or cancel.
    private func multipartPartAnswered(_ answer: TaskDecisionAnswer?) {
        guard !completed, multipart != nil else { return }
        switch answer {
        case .response(.allow)?, .response(.becomeDownload)?:
            performMultipart(multipart!.answered())
            refreshBackpressure()
            if multipartEndPending, multipart?.isIdle == true {
                multipartEndPending = false
                deliverEnd()
            }
        case nil:
            break  // the task ended meanwhile
        default:
            // The body may have ended already (the machine is finishing, waiting for this delivery).
            if multipartEndPending {
                multipartEndPending = false
                step { $0.consumerClosed(.cancelled()) }
            } else {
                step { $0.cancel() }
            }
        }
    }

    /// The cache transaction of this task, made at first use.
    private func currentCacheTransaction() -> CacheTransaction? {
        guard !madeCacheTransaction else { return cacheTransaction }
        madeCacheTransaction = true
        switch spec.kind {
        case .download, .webSocket: return nil
        case .data, .upload: break
        }
        cacheTransaction = environment.stageSettings.urlCache.map(CacheTransaction.init)
        return cacheTransaction
    }

    /// Asks `willCacheResponse` (data tasks with a delegate), stores the answer off the executor (the cache may be
    /// the app's subclass, and the disk tier blocks), then lets the task complete.
    private func store(_ cached: CachedURLResponse, for request: URLRequest, in cache: URLCache) {
        let asks = spec.asksForResponses
        // Set here, on the executor, before the question is even asked: a `cancel()` that comes in between must
        // already see it.
        cacheDecisionPending = asks
        Task(executorPreference: StageExecutor.shared) { [self] in
            var chosen: CachedURLResponse? = cached
            if asks {
                guard case .willCacheResponse(let answer)? = await decide(.willCacheResponse(cached)) else {
                    return onExecutor { [self] in step { $0.consumerClosed(nil) } }
                }
                chosen = answer
            }
            if let chosen { cache.storeCachedResponse(chosen, for: request) }
            onExecutor { [self] in step { $0.consumerClosed(nil) } }
        }
    }

    // MARK: - Ending

    private func complete(_ outcome: TransferMachine<ByteBuffer>.Outcome) {
        beginTimer?.cancel()
        beginTimer = nil
        resourceClock.stop(on: environment.deadlines)
        // The source's exchange holds the consumer, which holds this engine: let go of both, or each task would
        // leak its whole attempt.
        source = nil
        preparedSource = nil
        let waiting = pendingDecision
        pendingDecision = nil
        waiting?.resume(returning: nil)
        releaseUnopenedPartialFile()
        // A connection the server switched for this data task (`101`) that nothing took over: the app did not answer
        // `.becomeStream` (or had no data delegate to ask), or the task ended before the transport left it. After
        // `.becomeStream` the stream task has taken it already and the slot is empty.
        dataUpgrade?.closeWhatIsLeft()
        let url = request.url ?? spec.request.url
        switch outcome {
        case .success:
            debug(
                "task finished", metadata: ["task": "\(spec.taskIdentifier)", "bytes": "\(receivedBytes)"])
            finishEmitting(TaskResult(error: nil, file: downloadedFile, resumeData: nil))
        case .failure(let error, let producingResumeData):
            debug("task failed", metadata: ["task": "\(spec.taskIdentifier)", "error": "\(error)"])
            let urlError = URLErrorMapping.urlError(from: error, failingURL: url).addingPeerTrust(
                of: error, host: url?.host)
            let reported = error.reportedError?.error
            if let download {
                finishDownload(
                    download, after: urlError, reporting: reported, producingResumeData: producingResumeData)
            } else {
                finishEmitting(TaskResult(error: urlError, file: nil, resumeData: nil, reportedError: reported))
            }
        }
    }

    /// Emits the completion, the last event (after the metrics, when they are collected).
    func finishEmitting(_ result: TaskResult) {
        guard !completed else { return }
        if let transactions {
            sink?.receive(.metrics(TaskMetricsRecord(transactions: transactions, redirectCount: redirectCount)))
        }
        telemetry?.completed(error: result.error)
        telemetry = nil
        sink?.receive(.completed(result))
        completed = true
        sink = nil
    }

    /// Hands `event` to the sink, unless the task already completed.
    func emit(_ event: TaskEvent) {
        guard !completed else { return }
        if let telemetry { observe(event, telemetry) }
        sink?.receive(event)
    }

    /// What the span, the metrics and the trace log take from an event.
    private func observe(_ event: TaskEvent, _ telemetry: TaskTelemetry) {
        switch event {
        case .response(let response):
            telemetry.responded(response)
        case .downloadResumed(let offset, _):
            telemetry.resumed(at: offset)
        case .timeline(let timeline):
            telemetry.exchanged(timeline)
        default:
            break
        }
    }

    /// A failure that is not about one attempt (writing the download file).
    func fail(_ error: TransferError) {
        onExecutor { [self] in step { $0.failed(error) } }
    }

    // MARK: - Helpers

    /// Changes the transaction of `attempt` (the latest one: an attempt has at most one source).
    private func updateTransaction(_ attempt: Int, _ change: (inout TransactionRecord) -> Void) {
        guard let index = transactions?.lastIndex(where: { $0.attempt == attempt }) else { return }
        change(&transactions![index])
    }

    private func setRequest(_ newRequest: URLRequest) {
        request = newRequest
        emit(.currentRequest(visibleRequest(newRequest)))
    }

    /// `request` without the credentials the engine wrote to answer challenges: what `currentRequest` and resume
    /// data show.
    func visibleRequest(_ request: URLRequest) -> URLRequest {
        answeredCredentials?.visible(request) ?? request
    }

    /// The request being loaded.
    var currentRequest: URLRequest { request }

    /// The accepted response, once there is one.
    var lastResponse: URLResponse? { response }

    /// Whether anything reads the exchanges' timelines: task metrics, telemetry or debug lines. When nothing does,
    /// the transport records none.
    private var observesTimelines: Bool { transactions != nil || telemetry != nil || logLevel <= .debug }

    /// Whether the app decides on each response: a data task with a delegate (a download has no such decision).
    private var asksForResponses: Bool { spec.asksForResponses && download == nil }

    private func makeContext() -> StageContext {
        StageContext(
            configuration: environment.configuration,
            settings: environment.stageSettings,
            task: environment.task,
            currentRequest: request,
            redirectCount: redirectCount,
            asksForRedirects: spec.asksForRedirects,
            asksForResponses: asksForResponses,
            // The context lives only while the chain runs: holding the engine strongly makes no lasting cycle.
            decider: self,
            authentication: authentication,
            authenticatedSpaces: environment.authenticatedSpaces,
            uploadBody: uploadBody,
            cache: currentCacheTransaction(),
            responseOrigin: source?.origin ?? .network,
            protocolRedirect: protocolRedirect,
            sentAuthorization: sentAuthorization,
            answeredCredentials: answeredCredentials
        )
    }

    /// Emits a decision and waits for ``answer(_:)``; `nil` when the task ended first.
    func decide(_ decision: TaskDecision) async -> TaskDecisionAnswer? {
        await withCheckedContinuation { continuation in
            onExecutor { [self] in
                // `willCacheResponse` comes after the body ended, while the task finishes, and so may a multipart
                // part's response (the body's end waits for it); every other decision belongs to a task that has not.
                var asksWhileFinishing = false
                if case .willCacheResponse = decision { asksWhileFinishing = !completed }
                if case .response = decision, multipart?.isDeciding == true { asksWhileFinishing = !completed }
                guard !machine.isOver || asksWhileFinishing, pendingDecision == nil else {
                    continuation.resume(returning: nil)
                    return
                }
                pendingDecision = continuation
                if case .authenticate(let question) = decision {
                    telemetry?.challenged(
                        method: question.space.authenticationMethod, realm: question.space.realm,
                        isProxy: question.space.proxyType != nil)
                }
                emit(.decide(decision))
            }
        }
    }

    fileprivate func sourceEvent(attempt: Int, _ body: @escaping @Sendable (TaskEngine) -> Void) {
        onExecutor { [self] in
            guard machine.attempt == attempt else { return }
            body(self)
        }
    }

    // MARK: - The executor

    /// Runs `job` on the executor (see ``EngineExecutor``).
    fileprivate func submit(_ job: Job) {
        executor.execute(job) { [self] job in handle(job) }
    }

    private func onExecutor(_ body: @escaping @Sendable () -> Void) {
        submit(.run(body))
    }

    private func handle(_ job: Job) {
        switch job {
        case .run(let body):
            body()
        case .start:
            begin()
        case .head(let response, let attempt):
            guard machine.attempt == attempt else { return }
            if transactions != nil { updateTransaction(attempt) { $0.response = response } }
            if logLevel <= .trace, let http = response as? HTTPURLResponse {
                let fields = http.allHeaderFields.map { ("\($0.key)", "\($0.value)") }
                debugLogger?.trace(
                    "response head",
                    metadata: ["head": "\(LogRedaction.head("HTTP \(http.statusCode)", fields: fields))"])
            }
            pendingResponse = response
            step { $0.head(attempt: attempt) }
        // The machine ignores parts, ends and failures of an attempt that is not the current one.
        case .part(let part, let attempt):
            step { $0.bodyPart(part, attempt: attempt) }
        case .end(let attempt):
            step { $0.end(attempt: attempt) }
        case .failed(let error, let attempt):
            step { $0.failed(attempt: attempt, error) }
        case .timeline(let timeline, let attempt):
            // Also of an earlier attempt (a drained redirect's exchange ends after the follow-up started).
            if transactions != nil { updateTransaction(attempt) { $0.timeline = timeline } }
            guard machine.attempt == attempt else { return }
            debug(
                "exchange",
                metadata: [
                    "task": "\(spec.taskIdentifier)", "protocol": "\(timeline.protocolName ?? "-")",
                    "reused": "\(timeline.isReusedConnection)",
                    "remote": "\(timeline.remoteAddress ?? "-"):\(timeline.remotePort ?? 0)",
                    "bodyBytes": "\(timeline.responseBodyBytesReceived)",
                ]
            )
            emit(.timeline(timeline))
        }
    }

    /// A debug line, built only when the level lets it out (the level is read once, see ``logLevel``).
    private func debug(
        _ message: @autoclosure () -> Logger.Message,
        metadata: @autoclosure () -> Logger.Metadata,
        file: String = #fileID,
        function: String = #function,
        line: UInt = #line
    ) {
        guard logLevel <= .debug else { return }
        debugLogger?.debug(message(), metadata: metadata(), file: file, function: function, line: line)
    }

    /// How long the `earliestBeginDate` timer waits: until the date, and not at all once it passed. `begin` found it
    /// in the future, but it may have passed since; ``timeAmount(_:)`` reads an interval of 0 or less as "no limit",
    /// which parked such a task for a year.
    static func beginTimerDelay(_ interval: TimeInterval) -> TimeAmount {
        interval > 0 ? timeAmount(interval) : .zero
    }

    static func timeAmount(_ interval: TimeInterval) -> TimeAmount {
        guard interval.isFinite, interval > 0 else { return .hours(24 * 365) }
        return .nanoseconds(Int64(min(interval, 1e9) * 1_000_000_000))
    }
}

/// Forwards one attempt's source events to the engine's executor, tagged with the attempt, so that events of an
/// abandoned attempt (a followed redirect) are ignored.
private struct AttemptConsumer: ResponseSourceConsumer {
    let engine: TaskEngine
    let attempt: Int
    /// Whether anything reads the exchanges' timelines (metrics, telemetry, the debug log): without a reader, a
    /// timeline costs no job on the executor.
    let observesTimelines: Bool

    func sourceDidSendBodyData(bytesSent: Int64, totalBytesSent: Int64) {
        engine.sourceEvent(attempt: attempt) { engine in
            engine.emit(.sentBodyData(bytesSent: bytesSent, totalBytesSent: totalBytesSent))
        }
    }

    func sourceDidReceive(response: URLResponse) {
        engine.submit(.head(response, attempt: attempt))
    }

    func sourceIsWaitingForConnectivity() {
        engine.sourceEvent(attempt: attempt) { engine in
            // Once per task, however many attempts (redirects, retries) meet the same lack of a network.
            guard !engine.reportedWaitingForConnectivity else { return }
            engine.reportedWaitingForConnectivity = true
            engine.emit(.waitingForConnectivity)
        }
    }

    func sourceDidReceiveInformational(_ response: HTTPURLResponse) {
        engine.sourceEvent(attempt: attempt) { engine in engine.emit(.informationalResponse(response)) }
    }

    func sourceDidRedirect(to request: URLRequest, response: URLResponse) {
        engine.sourceEvent(attempt: attempt) { engine in engine.protocolRedirect = request }
        engine.submit(.head(response, attempt: attempt))
    }

    func sourceDidReceive(part: ByteBuffer) {
        engine.submit(.part(part, attempt: attempt))
    }

    func sourceDidFinish() {
        engine.submit(.end(attempt: attempt))
    }

    func sourceDidFail(_ error: TransferError) {
        engine.submit(.failed(error, attempt: attempt))
    }

    func sourceDidCollect(_ timeline: TransportTimeline) {
        guard observesTimelines else { return }
        engine.submit(.timeline(timeline, attempt: attempt))
    }

    func sourceAfterEventsHandled(_ body: @escaping @Sendable () -> Void) {
        engine.submit(.run(body))
    }
}
