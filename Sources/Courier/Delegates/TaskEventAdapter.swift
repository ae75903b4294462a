import CourierHTTP
import Foundation
import NIOConcurrencyHelpers
import Synchronization

/// Turns one task's ``TaskEvent``s into what the app sees: the task's counters and progress, delegate calls,
/// completion handlers, async results and `AsyncBytes`. With ``TaskEventAdapter+Completion`` it is the only code
/// that calls a task's delegate methods and completion handlers, always through the session's
/// ``DelegateDispatcher`` (on the delegate queue, in order), never on the engine's executor.
///
/// Events arrive on the engine's executor, one at a time; the answers to decisions come back from the delegate
/// queue and go to the engine, which serializes them with everything else.
final class TaskEventAdapter: TaskEventSink, TaskHost {
    /// Bytes handed to the delegate queue but not yet consumed before the transfer pauses.
    static let delegateHighWatermark = 1 << 20

    private struct State {
        /// The task events are reported for; a data task that becomes a download hands over to its download task.
        var task: URLSessionTask
        /// The body, for completion handlers and `data(for:)`.
        var body = Data()
        var outstandingDelegateBytes = 0
        /// Parts waiting for the delegate queue, delivered by one scheduled job (not one job per part).
        var pendingDelegateData: [Data] = []
        var delegateDeliveryScheduled = false
        var backpressured = false
        /// `cancel(byProducingResumeData:)`'s handler, answered at completion.
        var resumeDataHandler: (@Sendable (Data?) -> Void)?
        /// The completion was handled: a handler set now is answered `nil` at once.
        var completed = false
        /// `didFinishCollecting` went to the delegate queue: a completion that is not delivered there waits for it.
        var metricsDelivered = false
        /// The engine, for answers and backpressure; let go at completion (the engine holds the adapter until then).
        /// Not a weak reference: that would make every retain and release of the engine slow.
        var engine: TaskEngine?
    }

    private let state: Mutex<State>

    init(task: URLSessionTask) {
        self.state = Mutex(State(task: task))
    }

    var task: URLSessionTask { state.withLock { $0.task } }

    /// Whether the task has a delegate to receive `didFinishCollecting` (the task's or the session's): without one,
    /// the engine records no transactions.
    var collectsMetrics: Bool { task.resolvedDelegate(URLSessionTaskDelegate.self) != nil }

    /// Whether the consumer wants the source paused: the delegate queue is behind, or `AsyncBytes` holds more than
    /// its reader took.
    var wantsSourcePaused: Bool {
        let (backpressured, task) = state.withLock { ($0.backpressured, $0.task) }
        if backpressured { return true }
        if case .stream(let source) = task.completionMode { return source.isHoldingBack }
        return false
    }
    var engine: TaskEngine? { state.withLock { $0.engine } }

    /// Whether the app has the task suspended now.
    var isSuspended: Bool { task.state == .suspended }

    func attach(_ engine: TaskEngine) {
        state.withLock { $0.engine = engine }
    }

    /// Remembers the handler of `cancel(byProducingResumeData:)`; it gets the resume data (or `nil`) at completion.
    func setResumeDataHandler(_ handler: @escaping @Sendable (Data?) -> Void) {
        let unanswered: (@Sendable (Data?) -> Void)? = state.withLock { state in
            if state.completed { return handler }
            defer { state.resumeDataHandler = handler }
            return state.resumeDataHandler
        }
        if let unanswered { task.session.dispatcher.async { unanswered(nil) } }
    }

    // MARK: - Events (on the engine's executor)

    func receive(_ event: TaskEvent) {
        let task = self.task
        switch event {
        case .attemptStarted(let expected):
            task.update { $0.countOfBytesExpectedToSend = expected }
        case .sentBodyData(let bytesSent, let totalBytesSent):
            sentBodyData(bytesSent: bytesSent, total: totalBytesSent, task: task)
        case .currentRequest(let request):
            task.update { $0.replacedRequest.value = request }
        case .decide(let decision):
            decide(decision, task: task)
        case .becameDownload:
            if let dataTask = task as? URLSessionDataTask { becomeDownload(from: dataTask) }
        case .becameStream:
            if let dataTask = task as? URLSessionDataTask { becomeStream(from: dataTask) }
        case .informationalResponse(let response):
            informational(response, task: task)
        case .waitingForConnectivity:
            waitingForConnectivity(task: task)
        case .response(let response):
            // A new response (the next part of a multipart/x-mixed-replace body) replaces what came before it.
            if task.completionMode.collectsBody { state.withLock { $0.body = Data() } }
            record(response, task: task)
            if case .stream(let source) = task.completionMode { source.didReceive(response: response) }
        case .data(let data):
            received(data, task: task)
        case .receivedToFile(_, let total):
            task.update { $0.countOfBytesReceived = total }
            if task.progressTracksReceivedBytes { task.setProgress(completed: total) }
        case .downloadResumed(let offset, let expectedTotal):
            downloadResumed(offset: offset, expectedTotal: expectedTotal, task: task)
        case .downloadWrote(let bytes, let totalWritten, let totalExpected):
            downloadWrote(bytes: bytes, total: totalWritten, expected: totalExpected, task: task)
        case .timeline:
            // The engine builds the metrics from the timelines itself (`.metrics`); the task keeps none.
            break
        case .metrics(let record):
            finishedCollecting(record, task: task)
        case .completed(let result):
            completed(result, task: task)
        }
    }

    private func sentBodyData(bytesSent: Int64, total: Int64, task: URLSessionTask) {
        task.update { $0.countOfBytesSent = total }
        let expected = task.countOfBytesExpectedToSend
        if !task.progressTracksReceivedBytes {
            task.setProgress(total: expected, completed: total)
        }
        let session = task.session
        session.dispatcher.async {
            task.resolvedDelegate(URLSessionTaskDelegate.self)?.urlSession(
                session,
                task: task,
                didSendBodyData: bytesSent,
                totalBytesSent: total,
                totalBytesExpectedToSend: expected
            )
        }
    }

    /// `didFinishCollecting`, on the delegate queue, before the completion.
    private func finishedCollecting(_ record: TaskMetricsRecord, task: URLSessionTask) {
        guard let delegate = task.resolvedDelegate(URLSessionTaskDelegate.self) else { return }
        let metrics = URLSessionTaskMetrics(
            record, taskInterval: DateInterval(start: min(task.creationDate, Date()), end: Date()))
        state.withLock { $0.metricsDelivered = true }
        let session = task.session
        session.dispatcher.async {
            delegate.urlSession(session, task: task, didFinishCollecting: metrics)
        }
    }

    /// `didReceiveInformationalResponse`, on the delegate queue; nothing (no queue hop) without a task delegate.
    private func waitingForConnectivity(task: URLSessionTask) {
        guard let delegate = task.resolvedDelegate(URLSessionTaskDelegate.self) else { return }
        let session = task.session
        session.dispatcher.async {
            delegate.urlSession(session, taskIsWaitingForConnectivity: task)
        }
    }

    private func informational(_ response: HTTPURLResponse, task: URLSessionTask) {
        guard let delegate = task.resolvedDelegate(URLSessionTaskDelegate.self) else { return }
        let session = task.session
        session.dispatcher.async {
            delegate.urlSession(session, task: task, didReceiveInformationalResponse: response)
        }
    }

    private func record(_ response: URLResponse, task: URLSessionTask) {
        let expected = response.expectedBodyLength
        task.update { state in
            state.response = response
            state.countOfBytesExpectedToReceive = expected
        }
        if task.progressTracksReceivedBytes { task.setProgress(total: expected) }
    }

    private func received(_ data: Data, task: URLSessionTask) {
        var received: Int64 = 0
        task.update { state in
            state.countOfBytesReceived += Int64(data.count)
            received = state.countOfBytesReceived
        }
        if task.progressTracksReceivedBytes { task.setProgress(completed: received) }
        switch task.completionMode {
        case .dataHandler, .collect:
            // The first piece becomes the body as it is (most bodies come in one): appending it to an empty body
            // would allocate and copy it again. Only a piece that owns its bytes: a larger one wraps a read buffer
            // the app would keep whole with its body (see `TaskEngine.largestCopiedPart`); and not a slice, whose
            // indices would not start at 0 as a body's do.
            let ownsItsBytes = data.count <= TaskEngine.largestCopiedPart && data.startIndex == 0
            state.withLock { state in
                if state.body.isEmpty, ownsItsBytes { state.body = data } else { state.body.append(data) }
            }
        case .stream(let source):
            if source.append(data) { engine?.backpressureChanged() }
        case .delegate:
            deliverToDelegate(data, task: task)
        case .downloadHandler, .downloadCollect:
            break
        }
    }

    private func downloadResumed(offset: Int64, expectedTotal: Int64, task: URLSessionTask) {
        task.update { state in
            state.countOfBytesReceived = offset
            state.countOfBytesExpectedToReceive = expectedTotal
        }
        task.setProgress(total: expectedTotal, completed: offset)
        guard case .delegate = task.completionMode, let downloadTask = task as? URLSessionDownloadTask else { return }
        let session = task.session
        session.dispatcher.async {
            downloadTask.resolvedDelegate(URLSessionDownloadDelegate.self)?.urlSession(
                session, downloadTask: downloadTask, didResumeAtOffset: offset, expectedTotalBytes: expectedTotal)
        }
    }

    private func downloadWrote(bytes: Int64, total: Int64, expected: Int64, task: URLSessionTask) {
        guard case .delegate = task.completionMode, let downloadTask = task as? URLSessionDownloadTask else { return }
        let session = task.session
        session.dispatcher.async {
            downloadTask.resolvedDelegate(URLSessionDownloadDelegate.self)?.urlSession(
                session,
                downloadTask: downloadTask,
                didWriteData: bytes,
                totalBytesWritten: total,
                totalBytesExpectedToWrite: expected
            )
        }
    }

    // MARK: - Delegate data and backpressure

    private func deliverToDelegate(_ data: Data, task: URLSessionTask) {
        let count = data.count
        let (pause, schedule): (Bool, Bool) = state.withLock { state in
            state.outstandingDelegateBytes += count
            state.pendingDelegateData.append(data)
            let schedule = !state.delegateDeliveryScheduled
            state.delegateDeliveryScheduled = true
            let pause = !state.backpressured && state.outstandingDelegateBytes > Self.delegateHighWatermark
            if pause { state.backpressured = true }
            return (pause, schedule)
        }
        if pause { engine?.backpressureChanged() }
        guard schedule else { return }
        task.session.dispatcher.async { [self] in drainDelegateData() }
    }

    /// On the delegate queue: hands every waiting part to the delegate, in order.
    private func drainDelegateData() {
        let (parts, task): ([Data], URLSessionTask) = state.withLock { state in
            state.delegateDeliveryScheduled = false
            defer { state.pendingDelegateData = [] }
            return (state.pendingDelegateData, state.task)
        }
        // Without a data delegate the parts are dropped, but still accounted, so backpressure never sticks.
        let dataTask = task as? URLSessionDataTask
        let delegate = task.resolvedDelegate(URLSessionDataDelegate.self)
        var delivered = 0
        for part in parts {
            if let dataTask, let delegate {
                delegate.urlSession(task.session, dataTask: dataTask, didReceive: part)
            }
            delivered += part.count
        }
        let resume: Bool = state.withLock { state in
            state.outstandingDelegateBytes -= delivered
            let resume = state.backpressured && state.outstandingDelegateBytes <= Self.delegateHighWatermark / 2
            if resume { state.backpressured = false }
            return resume
        }
        if resume { engine?.backpressureChanged() }
    }

    // MARK: - Decisions

    private func decide(_ decision: TaskDecision, task: URLSessionTask) {
        let session = task.session
        switch decision {
        case .beginDelayedRequest(let request):
            guard let delegate = task.resolvedDelegate(URLSessionTaskDelegate.self) else {
                return answer(.beginDelayedRequest(.continueLoading, nil))
            }
            session.dispatcher.async { [self] in
                let once = CompletionOnce()
                delegate.urlSession(session, task: task, willBeginDelayedRequest: request) { disposition, newRequest in
                    guard once.claim() else { return }
                    self.answer(.beginDelayedRequest(disposition, newRequest))
                }
            }
        case .redirect(let response, let newRequest):
            guard let delegate = task.resolvedDelegate(URLSessionTaskDelegate.self) else {
                return answer(.redirect(newRequest))
            }
            session.dispatcher.async { [self] in
                let once = CompletionOnce()
                delegate.urlSession(session, task: task, willPerformHTTPRedirection: response, newRequest: newRequest) {
                    chosen in
                    guard once.claim() else { return }
                    self.answer(.redirect(chosen))
                }
            }
        case .authenticate(let question):
            authenticate(question, task: task)
        case .willCacheResponse(let proposed):
            guard let dataTask = task as? URLSessionDataTask,
                let delegate = task.resolvedDelegate(URLSessionDataDelegate.self)
            else { return answer(.willCacheResponse(proposed)) }
            session.dispatcher.async { [self] in
                let once = CompletionOnce()
                delegate.urlSession(session, dataTask: dataTask, willCacheResponse: proposed) { chosen in
                    guard once.claim() else { return }
                    self.answer(.willCacheResponse(chosen))
                }
            }
        case .response(let response):
            record(response, task: task)
            guard let dataTask = task as? URLSessionDataTask,
                let delegate = task.resolvedDelegate(URLSessionDataDelegate.self)
            else { return answer(.response(.allow)) }
            session.dispatcher.async { [self] in
                let once = CompletionOnce()
                delegate.urlSession(session, dataTask: dataTask, didReceive: response) { disposition in
                    guard once.claim() else { return }
                    // The hand-over to a download task happens when the engine accepts it (`.becameDownload`):
                    // a task that ended meanwhile gets no download task.
                    self.answer(.response(disposition))
                }
            }
        }
    }

    /// A 401 or 407: the task delegate's `urlSession(_:task:didReceive:completionHandler:)` (which falls back to the
    /// session delegate's, as on Darwin), on the delegate queue; without a delegate, default handling.
    private func authenticate(_ question: AuthenticationQuestion, task: URLSessionTask) {
        guard let delegate = task.resolvedDelegate(URLSessionTaskDelegate.self) else {
            return answer(.authenticate(.performDefaultHandling, nil))
        }
        let session = task.session
        let challenge = URLAuthenticationChallenge(
            protectionSpace: question.space.protectionSpace,
            proposedCredential: question.proposedCredential?.urlCredential,
            previousFailureCount: question.previousFailureCount,
            failureResponse: question.failureResponse.response,
            error: nil,
            sender: CompletionHandlerChallengeSender()
        )
        session.dispatcher.async { [self] in
            let once = CompletionOnce()
            delegate.urlSession(session, task: task, didReceive: challenge) { disposition, credential in
                guard once.claim() else { return }
                self.answer(.authenticate(disposition, AuthenticationQuestion.Credential(credential)))
            }
        }
    }

    private func answer(_ answer: TaskDecisionAnswer) {
        engine?.answer(answer)
    }

    /// `.becomeDownload`: a download task takes over the transfer. The body already received (held while the
    /// delegate decided) and the rest go to its file; the data task ends without further delegate calls.
    private func becomeDownload(from dataTask: URLSessionDataTask) {
        let session = dataTask.session
        let request = dataTask.currentRequest ?? dataTask.originalRequest ?? URLRequest(url: URL(fileURLWithPath: "/"))
        let downloadTask = URLSessionDownloadTask(
            session: session,
            request: request,
            identifier: session.registry.nextIdentifier(),
            completionMode: .delegate
        )
        session.registry.replace(dataTask, with: downloadTask)
        let response = dataTask.response
        let expected = dataTask.countOfBytesExpectedToReceive
        let engine = self.engine
        // The task's own delegate carries over, as on Darwin: the download task's events (`didWriteData`,
        // `didFinishDownloadingTo`, the completion) go to the delegate the app gave the data task, not only to the
        // session's.
        let taskDelegate = dataTask.delegate
        downloadTask.update { state in
            _ = state.lifecycle.resume()
            state.engine = engine
            state.adapter = self
            state.response = response
            state.countOfBytesExpectedToReceive = expected
            state.delegate = taskDelegate
        }
        downloadTask.setProgress(total: expected)
        state.withLock { $0.task = downloadTask }
        dataTask.endSilently(removeFromSession: false)
        let dataDelegate = dataTask.resolvedDelegate(URLSessionDataDelegate.self)
        session.dispatcher.async {
            dataDelegate?.urlSession(session, dataTask: dataTask, didBecome: downloadTask)
            // The data task has ended: it lets go of its delegate as a completed task does (a delegate that keeps
            // its task would otherwise never be freed); the download task holds it now.
            dataTask.releaseDelegate()
        }
    }

    /// `.becomeStream`: a stream task takes over the connection the server switched; the data task ends without a
    /// completion, as on Darwin, and the delegate hears `didBecome streamTask`.
    private func becomeStream(from dataTask: URLSessionDataTask) {
        guard let upgraded = engine?.dataUpgrade?.take() else { return }
        let session = dataTask.session
        let url = dataTask.currentRequest?.url ?? dataTask.originalRequest?.url
        let port = url?.port ?? (url?.scheme?.lowercased() == "https" ? 443 : 80)
        // The task's own delegate carries over, as for `.becomeDownload`: the stream task's events (its sides
        // closing, its completion) go to the delegate the app gave the data task, not only to the session's.
        let streamTask = URLSessionStreamTask(
            session: session, adopting: upgraded, hostName: url?.host ?? "", port: port,
            identifier: session.registry.nextIdentifier(), delegate: dataTask.delegate)
        session.registry.replace(dataTask, with: streamTask)
        dataTask.endSilently(removeFromSession: false)
        let dataDelegate = dataTask.resolvedDelegate(URLSessionDataDelegate.self)
        session.dispatcher.async {
            dataDelegate?.urlSession(session, dataTask: dataTask, didBecome: streamTask)
            // The data task has ended: it lets go of its delegate as a completed task does; the stream task holds it.
            dataTask.releaseDelegate()
        }
    }

    /// `needNewBodyStream`, asked on the delegate queue (task delegate first, then the session's); `nil` without
    /// a delegate.
    func askForNewBodyStream() async -> InputStream? {
        let task = self.task
        guard let delegate = task.resolvedDelegate(URLSessionTaskDelegate.self) else { return nil }
        let session = task.session
        let box: InputStreamBox? = await withCheckedContinuation { continuation in
            session.dispatcher.async {
                let answered = CompletionOnce()
                delegate.urlSession(session, task: task) { stream in
                    guard answered.claim() else { return }
                    continuation.resume(returning: stream.map(InputStreamBox.init))
                }
            }
        }
        return box?.stream
    }

    // MARK: - Completion

    private func completed(_ result: TaskResult, task: URLSessionTask) {
        let (body, resumeDataHandler, metricsDelivered) = state.withLock { state in
            defer {
                state.body = Data()
                state.resumeDataHandler = nil
                state.completed = true
                state.engine = nil
            }
            return (state.body, state.resumeDataHandler, state.metricsDelivered)
        }
        if let resumeDataHandler {
            let resumeData = result.resumeData
            task.session.dispatcher.async { resumeDataHandler(resumeData) }
        }
        let delivered = task.completionMode.collectsBody ? body : nil
        if metricsDelivered && !task.completionMode.completesOnDelegateQueue {
            // An async call (`data(for:delegate:)`) returns after its delegate saw the metrics, as on Darwin.
            task.session.dispatcher.async { task.complete(with: result.appError, body: delivered, file: result.file) }
        } else {
            task.complete(with: result.appError, body: delivered, file: result.file)
        }
    }
}
