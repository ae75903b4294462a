import CourierHTTP
import CourierTransport
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOFoundationCompat
import NIOPosix

/// Runs one task: prepares each attempt through ``RequestPipeline``, hands it to the transport, turns the
/// transport's events into task state and deliveries, and loops back for redirects.
///
/// Transport events arrive on an event loop; the runner only updates state under its lock and submits
/// delegate calls to the session's dispatcher — user code never runs here.
final class TaskRunner: @unchecked Sendable {
    /// Bytes handed to the delegate queue but not yet consumed before the transfer pauses.
    static let delegateHighWatermark = 1 << 20

    enum PauseReason: Hashable {
        case suspended
        case awaitingDecision
        case backpressure
    }

    struct State {
        var generation = 0
        var exchange: TransportExchange?
        var pauseReasons: Set<PauseReason> = []
        var redirectCount = 0
        var body = Data()
        var outstandingDelegateBytes = 0
        /// Parts waiting for the delegate queue, delivered by one scheduled job (not one job per part).
        var pendingDelegateData: [Data] = []
        var delegateDeliveryScheduled = false
        /// When the task must be over (`timeoutIntervalForResource`), moved later by time spent suspended.
        /// The transport enforces it; the runner only carries it from attempt to attempt.
        var resourceDeadline: NIODeadline?
        var resourceTimeout: TimeAmount = .hours(24 * 7)
        var suspendedAt: NIODeadline?
        var delayTimer: Scheduled<Void>?
        var finished = false
        /// Whether a redirect dropped the body, and whether it was sent before.
        var bodyState = TransportRequestBuilder.BodyState()
        /// Download tasks stream the body into a file.
        var download: DownloadSink?
        /// A resumed download waiting for the response to its range request.
        var resume: ResumeProgress?
        /// A partial file this task claimed for resuming and has not opened yet (see `DownloadDirectory.claim`).
        var claimedPartialFile: URL?
        /// While the delegate decides on a response (disposition, redirect), body parts and the end that the
        /// transport already decoded are held here, then replayed or dropped.
        /// Set while held events are being replayed, so that newer ones queue behind them.
        var replaying = false
        var heldParts: [ByteBuffer] = []
        var heldFinish = false

        /// Events are held while the task is suspended (what was read before the pause took effect is not
        /// delivered until `resume()`), while the delegate decides, and while held events are replayed.
        var isHolding: Bool {
            replaying || pauseReasons.contains(.suspended) || pauseReasons.contains(.awaitingDecision)
        }
    }

    /// The task the runner works for; a data task that becomes a download hands over to its download task.
    var task: URLSessionTask { currentTask.withLockedValue { $0 } }
    private let currentTask: NIOLockedValueBox<URLSessionTask>
    let lock = NIOLock()
    var state = State()
    private let timerLoop: any EventLoop

    let logger: Logger

    init(task: URLSessionTask) {
        self.currentTask = NIOLockedValueBox(task)
        self.timerLoop = MultiThreadedEventLoopGroup.singleton.any()
        // The task identifier goes into each event's metadata, which is only built when debug logging is on.
        self.logger = task.session.logger
    }

    var session: URLSession { task.session }

    // MARK: - Control (from the task)

    func start() {
        // Cancelled between resume() and here: the cancellation already completed the task.
        if lock.withLock({ state.finished }) { return }
        let resourceTimeout = session.sessionConfiguration.timeoutIntervalForResource
        lock.withLock { state.resourceTimeout = Self.timeAmount(resourceTimeout) }
        if task.createdOnInvalidSession.withLockedValue({ $0 }) {
            fail(TransferError.cancelled("the task was created after its session was invalidated"))
            return
        }
        if let reason = task.unsupportedReason {
            fail(TransferError.unsupportedURL(reason))
            return
        }
        if session.sessionConfiguration.identifier != nil {
            fail(
                TransferError.unsupportedURL(
                    "background sessions need the courierd daemon, which is not available yet (a later Courier release)"
                )
            )
            return
        }
        if session.sessionConfiguration.requestsProxy {
            fail(
                TransferError.unsupportedURL(
                    "connectionProxyDictionary enables a proxy, and Courier cannot send through proxies yet; "
                        + "the request is not sent directly instead"
                )
            )
            return
        }
        guard var request = task.currentRequest else {
            fail(TransferError.unsupportedURL("unsupported URL: the task has no request"))
            return
        }
        if let downloadTask = task as? URLSessionDownloadTask {
            let sink = makeDownloadSink(for: downloadTask)
            lock.withLock { state.download = sink }
            if let resume = downloadTask.resume {
                guard let resumed = prepareResume(resume, request: request) else { return }
                request = resumed
            }
        }
        if let begin = task.earliestBeginDate, begin.timeIntervalSinceNow > 0 {
            let delayed = request
            let timer = timerLoop.scheduleTask(in: Self.timeAmount(begin.timeIntervalSinceNow)) { [self] in
                beginDelayed(delayed)
            }
            lock.withLock { state.delayTimer = timer }
            return
        }
        startResourceClock()
        send(request)
    }

    /// The `earliestBeginDate` arrived: the delegate may go on, swap the request, or cancel.
    private func beginDelayed(_ request: URLRequest) {
        startResourceClock()
        guard let delegate = task.resolvedDelegate(URLSessionTaskDelegate.self) else {
            send(request)
            return
        }
        let session = self.session
        let task = self.task
        session.dispatcher.async { [self] in
            let decided = CompletionOnce()
            delegate.urlSession(session, task: task, willBeginDelayedRequest: request) {
                [self] disposition, newRequest in
                guard decided.claim() else { return }
                switch disposition {
                case .continueLoading: send(request)
                case .useNewRequest: send(newRequest ?? request)
                case .cancel: fail(TransferError.cancelled())
                }
            }
        }
    }

    func pause() {
        lock.withLock {
            if state.suspendedAt == nil { state.suspendedAt = .now() }
        }
        addPause(.suspended)
    }

    func proceed() {
        lock.withLock {
            if let suspendedAt = state.suspendedAt, let deadline = state.resourceDeadline {
                state.resourceDeadline = deadline + (.now() - suspendedAt)
            }
            state.suspendedAt = nil
        }
        releaseHeld(.suspended)
    }

    /// The resource timeout counts from the moment the task begins loading.
    private func startResourceClock() {
        lock.withLock {
            if state.resourceDeadline == nil { state.resourceDeadline = .now() + state.resourceTimeout }
        }
    }

    func cancel() {
        fail(TransferError.cancelled())
    }

    /// `cancel(byProducingResumeData:)`: the handler gets resume data when the download can be resumed.
    func cancel(producingResumeData handler: @escaping @Sendable (Data?) -> Void) {
        fail(TransferError.cancelled(), resumeDataHandler: handler)
    }

    // MARK: - Attempts

    func send(_ request: URLRequest) {
        task.update { $0.currentRequest = request }
        let prepared: URLRequest
        var transportRequest: TransportRequest
        do {
            prepared = try RequestPipeline.prepare(request, task: task)
            let bodyState = lock.withLock { state.bodyState }
            transportRequest = try TransportRequestBuilder.make(
                from: prepared,
                task: task,
                configuration: session.sessionConfiguration,
                body: bodyState
            )
            lock.withLock { state.bodyState.sentBefore = true }
        } catch {
            fail(error)
            return
        }
        logger.debug(
            "sending request",
            metadata: [
                "task": "\(task.taskIdentifier)", "method": "\(transportRequest.method)",
                "url": "\(transportRequest.url.absoluteString)",
            ]
        )
        let deadline = lock.withLock { state.resourceDeadline }
        if let deadline, deadline <= .now() {
            fail(TransferError.timedOut("the resource timeout expired"))
            return
        }
        transportRequest.resourceDeadline = deadline
        let expectedToSend = transportRequest.body.length ?? NSURLSessionTransferSizeUnknown
        task.update { $0.countOfBytesExpectedToSend = expectedToSend }

        let generation: Int? = lock.withLock {
            if state.finished { return nil }
            state.generation += 1
            return state.generation
        }
        guard let generation else { return }
        let consumer = AttemptConsumer(runner: self, generation: generation)
        let exchange = session.transport.execute(transportRequest, consumer: consumer)
        let current: Bool = lock.withLock {
            guard state.generation == generation, !state.finished else { return false }
            state.exchange = exchange
            if !state.pauseReasons.isEmpty { exchange.pause() }
            return true
        }
        if !current { exchange.cancel() }
    }

    func isCurrent(_ generation: Int) -> Bool {
        lock.withLock { state.generation == generation && !state.finished }
    }

    // MARK: - Transport events (on an event loop)

    fileprivate func didSendBodyData(_ generation: Int, bytesSent: Int64, totalBytesSent: Int64) {
        guard isCurrent(generation) else { return }
        task.update { $0.countOfBytesSent = totalBytesSent }
        let expected = task.countOfBytesExpectedToSend
        if !task.progressTracksReceivedBytes {
            task.setProgress(total: expected, completed: totalBytesSent)
        }
        let session = self.session
        let task = self.task
        session.dispatcher.async {
            task.resolvedDelegate(URLSessionTaskDelegate.self)?.urlSession(
                session,
                task: task,
                didSendBodyData: bytesSent,
                totalBytesSent: totalBytesSent,
                totalBytesExpectedToSend: expected
            )
        }
    }

    fileprivate func didReceiveHead(_ generation: Int, head: TransportResponseHead) {
        guard isCurrent(generation), let request = task.currentRequest, let url = request.url else { return }
        guard let response = ResponseBuilder.makeResponse(head: head, url: url) else {
            fail(TransferError.badServerResponse("the status \(head.status) is not valid"))
            return
        }
        // Cookies of every response, redirects included, so the next hop already carries them.
        CookieStage.storeCookies(from: response, for: task)
        if let plan = redirectPlan(for: head, request: request) {
            handleRedirect(plan, response: response, request: request, generation: generation)
            return
        }
        deliverHead(response, generation: generation)
    }

    fileprivate func didReceiveBodyPart(_ generation: Int, part: ByteBuffer) {
        let held: Bool = lock.withLock {
            guard state.generation == generation, !state.finished else { return true }
            if state.isHolding { state.heldParts.append(part) }
            return state.isHolding
        }
        if !held { consumeBodyPart(part) }
    }

    private func consumeBodyPart(_ part: ByteBuffer) {
        let count = part.readableBytes
        // Large parts are wrapped, not copied (the Data keeps the buffer's storage alive); NIO's `.automatic`
        // would copy anything up to 256 KiB, which is every read.
        let data = Data(buffer: part, byteTransferStrategy: count > 16 * 1024 ? .noCopy : .copy)
        var received: Int64 = 0
        task.update { state in
            state.countOfBytesReceived += Int64(count)
            received = state.countOfBytesReceived
        }
        if task.progressTracksReceivedBytes {
            task.setProgress(completed: received)
        }
        if let download = lock.withLock({ state.download }) {
            download.append(data)
            return
        }
        switch task.completionMode {
        case .dataHandler, .collect:
            lock.withLock { state.body.append(data) }
        case .stream(let source):
            if source.append(data) {
                addPause(.backpressure)
            }
        case .delegate:
            deliverDataToDelegate(data)
        case .downloadHandler, .downloadCollect:
            break
        }
    }

    fileprivate func didFinish(_ generation: Int) {
        let held: Bool = lock.withLock {
            guard state.generation == generation, !state.finished else { return true }
            if state.isHolding { state.heldFinish = true }
            return state.isHolding
        }
        if !held { finishSuccessfully() }
    }

    private func finishSuccessfully() {
        logger.debug(
            "task finished", metadata: ["task": "\(task.taskIdentifier)", "bytes": "\(task.countOfBytesReceived)"])
        let (body, download): (Data?, DownloadSink?) = lock.withLock {
            state.finished = true
            state.exchange = nil
            return (task.completionMode.collectsBody ? state.body : nil, state.download)
        }
        guard let download else {
            task.complete(with: nil, body: body)
            return
        }
        // The task completes once every byte reached the file.
        download.finish { [self] result in
            switch result {
            case .success(let file):
                task.complete(with: nil, body: nil, file: file)
            case .failure(let error):
                download.discard()
                let url = task.currentRequest?.url ?? task.originalRequest?.url
                task.complete(with: URLErrorMapping.urlError(from: error, failingURL: url), body: nil)
            }
        }
    }

    func makeDownloadSink(for downloadTask: URLSessionDownloadTask) -> DownloadSink {
        DownloadSink(
            task: downloadTask,
            directory: session.sessionConfiguration.courierDownloadDirectory,
            onBackpressure: { [weak self] pause in
                if pause { self?.addPause(.backpressure) } else { self?.removePause(.backpressure) }
            },
            onFailure: { [weak self] error in self?.fail(error) }
        )
    }

    fileprivate func didFail(_ generation: Int, error: TransferError) {
        guard isCurrent(generation) else { return }
        fail(error)
    }

    // MARK: - Steps

    /// Records the final response and hands it on; `true` when a delegate decision now holds the body.
    @discardableResult
    func deliverHead(_ response: HTTPURLResponse, generation: Int) -> Bool {
        let expected = response.expectedContentLength
        logger.debug(
            "response",
            metadata: ["task": "\(task.taskIdentifier)", "status": "\(response.statusCode)", "length": "\(expected)"]
        )
        task.update { state in
            state.response = response
            state.countOfBytesExpectedToReceive = expected
        }
        if task.progressTracksReceivedBytes {
            task.setProgress(total: expected)
        }
        if let download = lock.withLock({ state.download }) {
            deliverDownloadHead(response, to: download)
            return false
        }
        switch task.completionMode {
        case .stream(let source):
            source.didReceive(response: response)
            return false
        case .dataHandler, .collect, .downloadHandler, .downloadCollect:
            return false
        case .delegate:
            guard let dataTask = task as? URLSessionDataTask else { return false }
            return askForDisposition(response, dataTask: dataTask, generation: generation)
        }
    }

    private func askForDisposition(_ response: URLResponse, dataTask: URLSessionDataTask, generation: Int) -> Bool {
        guard let delegate = task.resolvedDelegate(URLSessionDataDelegate.self) else { return false }
        startHolding()
        let session = self.session
        session.dispatcher.async { [self] in
            let decided = CompletionOnce()
            delegate.urlSession(session, dataTask: dataTask, didReceive: response) { [self] disposition in
                guard decided.claim() else { return }
                guard isCurrent(generation) else { return }
                switch disposition {
                case .allow:
                    releaseHeld()
                case .cancel:
                    fail(TransferError.cancelled())
                case .becomeDownload:
                    becomeDownload(from: dataTask)
                case .becomeStream:
                    fail(TransferError.unsupportedURL("becomeStream is not supported yet (stream tasks come later)"))
                }
            }
        }
        return true
    }

    private func deliverDataToDelegate(_ data: Data) {
        let count = data.count
        let (overWatermark, schedule): (Bool, Bool) = lock.withLock {
            state.outstandingDelegateBytes += count
            state.pendingDelegateData.append(data)
            let schedule = !state.delegateDeliveryScheduled
            state.delegateDeliveryScheduled = true
            return (state.outstandingDelegateBytes > Self.delegateHighWatermark, schedule)
        }
        if overWatermark { addPause(.backpressure) }
        guard schedule else { return }
        session.dispatcher.async { [self] in drainDelegateData() }
    }

    /// On the delegate queue: hands every waiting part to the delegate, in order.
    private func drainDelegateData() {
        let parts: [Data] = lock.withLock {
            state.delegateDeliveryScheduled = false
            defer { state.pendingDelegateData = [] }
            return state.pendingDelegateData
        }
        // Without a data delegate the parts are dropped, but still accounted, so backpressure never sticks.
        let dataTask = task as? URLSessionDataTask
        let delegate = task.resolvedDelegate(URLSessionDataDelegate.self)
        var delivered = 0
        for part in parts {
            if let dataTask, let delegate {
                delegate.urlSession(session, dataTask: dataTask, didReceive: part)
            }
            delivered += part.count
        }
        let drained: Bool = lock.withLock {
            state.outstandingDelegateBytes -= delivered
            return state.outstandingDelegateBytes <= Self.delegateHighWatermark / 2
        }
        if drained { removePause(.backpressure) }
    }

    /// The async byte stream's consumer caught up.
    func consumerDrained() {
        removePause(.backpressure)
    }

    /// Makes `newTask` the one this runner reports to.
    func handOver(to newTask: URLSessionTask) {
        currentTask.withLockedValue { $0 = newTask }
    }

    // MARK: - Holding events during a decision

    func startHolding() {
        addPause(.awaitingDecision)
    }

    /// Ends one reason to hold events. When none is left, replays what was held, in order, then lets the
    /// transfer continue.
    func releaseHeld(_ reason: PauseReason = .awaitingDecision) {
        let replay: Bool = lock.withLock {
            guard state.pauseReasons.remove(reason) != nil, !state.isHolding else { return false }
            state.replaying = true
            return true
        }
        if replay {
            while true {
                let next: (parts: [ByteBuffer], finish: Bool)? = lock.withLock {
                    if state.finished {
                        state.replaying = false
                        return nil
                    }
                    if state.heldParts.isEmpty {
                        state.replaying = false
                        defer { state.heldFinish = false }
                        return ([], state.heldFinish)
                    }
                    defer { state.heldParts = [] }
                    return (state.heldParts, false)
                }
                guard let next else { break }
                next.parts.forEach(consumeBodyPart)
                if next.parts.isEmpty {
                    if next.finish { finishSuccessfully() }
                    break
                }
            }
        }
        lock.withLock {
            if state.pauseReasons.isEmpty { state.exchange?.resume() }
        }
    }

    // MARK: - Pausing

    // The exchange is told under the runner's lock (its own lock is a leaf, and it calls nothing back), so
    // pause and resume decisions reach it in the order they were taken, whatever threads take them.

    func addPause(_ reason: PauseReason) {
        lock.withLock {
            let wasEmpty = state.pauseReasons.isEmpty
            state.pauseReasons.insert(reason)
            if wasEmpty { state.exchange?.pause() }
        }
    }

    func removePause(_ reason: PauseReason) {
        lock.withLock {
            guard state.pauseReasons.remove(reason) != nil, state.pauseReasons.isEmpty else { return }
            state.exchange?.resume()
        }
    }

    // MARK: - Ending

    func fail(_ error: any Error, resumeDataHandler: (@Sendable (Data?) -> Void)? = nil) {
        let exchange: TransportExchange?? = lock.withLock {
            if state.finished { return .none }
            state.finished = true
            state.delayTimer?.cancel()
            state.delayTimer = nil
            defer { state.exchange = nil }
            return .some(state.exchange)
        }
        guard case .some(let running) = exchange else {
            if let resumeDataHandler { session.dispatcher.async { resumeDataHandler(nil) } }
            return
        }
        logger.debug("task failed", metadata: ["task": "\(task.taskIdentifier)", "error": "\(error)"])
        releaseUnopenedPartialFile()
        running?.cancel()
        let url = task.currentRequest?.url ?? task.originalRequest?.url
        let urlError = URLErrorMapping.urlError(from: error, failingURL: url)
        if let download = lock.withLock({ state.download }) {
            finishDownload(download, after: urlError, resumeDataHandler: resumeDataHandler)
        } else {
            if let resumeDataHandler { session.dispatcher.async { resumeDataHandler(nil) } }
            task.complete(with: urlError, body: nil)
        }
    }

    static func timeAmount(_ interval: TimeInterval) -> TimeAmount {
        guard interval.isFinite, interval > 0 else { return .hours(24 * 365) }
        return .nanoseconds(Int64(min(interval, 1e9) * 1_000_000_000))
    }
}

/// Forwards one attempt's transport events to the runner, tagged with the attempt's generation so that events
/// of an abandoned attempt (a followed redirect) are ignored.
private final class AttemptConsumer: TransportResponseConsumer {
    let runner: TaskRunner
    let generation: Int

    init(runner: TaskRunner, generation: Int) {
        self.runner = runner
        self.generation = generation
    }

    func transportDidSendBodyData(bytesSent: Int64, totalBytesSent: Int64) {
        runner.didSendBodyData(generation, bytesSent: bytesSent, totalBytesSent: totalBytesSent)
    }

    func transportDidReceiveHead(_ head: TransportResponseHead) {
        runner.didReceiveHead(generation, head: head)
    }

    func transportDidReceiveBodyPart(_ part: ByteBuffer) {
        runner.didReceiveBodyPart(generation, part: part)
    }

    func transportDidFinish() {
        runner.didFinish(generation)
    }

    func transportDidFail(_ error: TransferError) {
        runner.didFail(generation, error: error)
    }
}
