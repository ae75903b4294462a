import CourierHTTP
import CourierTransport
import Foundation
import Instrumentation
import NIOConcurrencyHelpers
import Synchronization

/// A task in a URL session: one resource to load. Created suspended by a session's factory methods.
open class URLSessionTask: NSObject, NSCopying, ProgressReporting, @unchecked Sendable {
    /// The state of a task.
    public enum State: Int, Sendable {
        /// The task is running.
        case running = 0
        /// The task was suspended (or never resumed).
        case suspended = 1
        /// The task was told to cancel and has not yet completed.
        case canceling = 2
        /// The task completed (successfully, with an error, or cancelled).
        case completed = 3
    }

    /// The default priority.
    public static let defaultPriority: Float = 0.5
    /// A low priority.
    public static let lowPriority: Float = 0.0
    /// A high priority.
    public static let highPriority: Float = 1.0

    struct MutableState {
        var lifecycle = TaskLifecycle()
        /// Set when the task was created on an invalidated session: it completes with an error when resumed.
        var createdOnInvalidSession = false
        /// The current request once the engine reported another than the original (a redirect, a request the app
        /// replaced): out of line, so that a task carries one copy of its request inline. See
        /// ``URLSessionTask/currentRequest(in:)``.
        var replacedRequest = OutOfLine<URLRequest>()
        var response: URLResponse?
        var error: (any Error)?
        var countOfBytesSent: Int64 = 0
        var countOfBytesReceived: Int64 = 0
        var countOfBytesExpectedToSend: Int64 = 0
        var countOfBytesExpectedToReceive: Int64 = 0
        var delegate: (any URLSessionTaskDelegate)?
        /// The engine running the task, from the first `resume()` until it completes.
        var engine: TaskEngine?
        /// The adapter the engine reports to (kept with the engine: the download task a data task became shares it).
        var adapter: TaskEventAdapter?
        var progressUnits: (total: Int64, completed: Int64) = (-1, 0)
        /// What the app rarely sets, out of line: a queued task carries a reference instead of room for all of it.
        private var settings = OutOfLine<RareSettings>()

        struct RareSettings: Sendable {
            var countOfBytesClientExpectsToSend: Int64 = NSURLSessionTransferSizeUnknown
            var countOfBytesClientExpectsToReceive: Int64 = NSURLSessionTransferSizeUnknown
            var taskDescription: String?
            var priority: Float = URLSessionTask.defaultPriority
            var earliestBeginDate: Date?
            /// `nil` until the app sets it: the default depends on the kind of task (see
            /// ``URLSessionTask/prefersIncrementalDelivery``).
            var prefersIncrementalDelivery: Bool?
            /// The `Progress` object, made when first asked for (its setters may call observers: they are called
            /// after the lock is released).
            var progress: Progress?
        }

        private var rare: RareSettings { settings.value ?? RareSettings() }

        /// Changes the rare settings; a value equal to the default is not given a box of its own.
        private mutating func setRare(isDefault: Bool, _ change: (inout RareSettings) -> Void) {
            if isDefault, settings.value == nil { return }
            var changed = rare
            change(&changed)
            settings.value = changed
        }

        var countOfBytesClientExpectsToSend: Int64 {
            get { rare.countOfBytesClientExpectsToSend }
            set {
                setRare(isDefault: newValue == NSURLSessionTransferSizeUnknown) {
                    $0.countOfBytesClientExpectsToSend = newValue
                }
            }
        }
        var countOfBytesClientExpectsToReceive: Int64 {
            get { rare.countOfBytesClientExpectsToReceive }
            set {
                setRare(isDefault: newValue == NSURLSessionTransferSizeUnknown) {
                    $0.countOfBytesClientExpectsToReceive = newValue
                }
            }
        }
        var taskDescription: String? {
            get { rare.taskDescription }
            set { setRare(isDefault: newValue == nil) { $0.taskDescription = newValue } }
        }
        var priority: Float {
            get { rare.priority }
            set { setRare(isDefault: newValue == URLSessionTask.defaultPriority) { $0.priority = newValue } }
        }
        var earliestBeginDate: Date? {
            get { rare.earliestBeginDate }
            set { setRare(isDefault: newValue == nil) { $0.earliestBeginDate = newValue } }
        }
        var prefersIncrementalDelivery: Bool? {
            get { rare.prefersIncrementalDelivery }
            set { setRare(isDefault: newValue == nil) { $0.prefersIncrementalDelivery = newValue } }
        }
        var progress: Progress? {
            get { settings.value?.progress }
            set { setRare(isDefault: newValue == nil) { $0.progress = newValue } }
        }
    }

    let mutable: Mutex<MutableState>
    /// The session that created the task, held for the task's whole life: a running task keeps its session alive,
    /// as on Darwin (the app may drop its own reference once it resumed the task), and a completed task the app
    /// keeps keeps it too, which costs no more than that (the session holds its delegate until it is invalidated
    /// anyway, and lists only tasks that have not completed).
    let session: URLSession
    /// How the task reports its outcome.
    let completionMode: TaskCompletionMode

    private let storedIdentifier: Int
    /// The original request; its engine's copy shares its storage (a queued task carries the request once).
    let storedOriginalRequest: URLRequest?

    /// An identifier unique among the tasks of the session.
    open var taskIdentifier: Int { storedIdentifier }
    /// The request the task was created with.
    open var originalRequest: URLRequest? { storedOriginalRequest }
    /// Progress of the transfer in bytes. Cancelling, pausing and resuming it cancels, suspends and resumes the
    /// task.
    ///
    /// Created on first use (a `Progress` costs more than a small request): the byte counts are kept by the task
    /// and reflected into the object from then on, so it reads the same as one made with the task.
    open var progress: Progress {
        if let existing = mutable.withLock({ $0.progress }) { return existing }
        let created = Progress(totalUnitCount: -1)
        let winner = mutable.withLock { state -> Progress in
            if let raced = state.progress { return raced }
            state.progress = created
            return created
        }
        if winner === created {
            bind(created)
            writeUnits(to: created)
        }
        return winner
    }

    /// Held while Courier writes to any task's `Progress`. swift-corelibs-foundation's `Progress` has no lock of its
    /// own (Darwin's does): a write also updates the progress's parent, so two tasks whose progress objects are
    /// children of one `Progress` (the usual way to show the overall progress of several transfers) would change
    /// that parent from two engine threads at once, losing its counts or corrupting its set of children.
    private static let progressWrites = Mutex(())

    /// Writes the task's current counts to `progress`, in the lock every writer takes, so that of two writers the
    /// later one leaves the latest counts. Courier's `Progress` objects are plain `Progress` instances and their
    /// setters call no observer on Linux (no KVO), so no app code runs in the lock.
    private func writeUnits(to progress: Progress) {
        Self.progressWrites.withLock { _ in
            let units = mutable.withLock { $0.progressUnits }
            // Foundation on Linux traps when a total goes from a positive count straight to 0 (a part of a
            // multipart/x-mixed-replace body that announces no body after one that did); through -1 it does not.
            if units.total == 0, progress.totalUnitCount > 0 { progress.totalUnitCount = -1 }
            progress.totalUnitCount = units.total
            progress.completedUnitCount = units.completed
        }
    }

    /// When the task was created: the start of its metrics' `taskInterval`, as on Darwin.
    let creationDate = Date()
    /// The service context current where the task was made: its span is a child of this one, whichever API (async,
    /// completion handler, delegate) started it. Read only when the session traces.
    let creationContext: ServiceContext?

    init(session: URLSession, request: URLRequest, identifier: Int, completionMode: TaskCompletionMode) {
        self.creationContext = session.telemetry.tracer == nil ? nil : ServiceContext.current
        self.session = session
        self.storedIdentifier = identifier
        self.storedOriginalRequest = request
        self.completionMode = completionMode
        var state = MutableState()
        // As on Darwin, the current request carries the session's additional headers from the start; the original
        // request stays the app's.
        state.replacedRequest.value = session.stageSettings.addingAdditionalHeaders(to: request)
        self.mutable = Mutex(state)
        self.isDetached = false
        super.init()
    }

    /// Creates a task that belongs to no session.
    ///
    /// Darwin deprecates this initializer; it exists so that subclasses (test doubles, for example) can be
    /// created. Such a task has ``taskIdentifier`` 0 and no request, and it cannot run: ``resume()`` completes it
    /// with `URLError(.unsupportedURL)` saying that it belongs to no session.
    public override init() {
        self.creationContext = nil
        self.session = URLSession.shared
        self.storedIdentifier = 0
        self.storedOriginalRequest = nil
        self.completionMode = .delegate
        self.isDetached = true
        self.mutable = Mutex(MutableState())
        super.init()
    }

    /// Whether the task was made with ``init()`` and so belongs to no session.
    let isDetached: Bool

    /// Returns the task itself: a task is an identity (one transfer), as on Darwin, so a copy is the same object.
    open func copy(with zone: NSZone?) -> Any {
        self
    }

    /// Returns the task itself (see ``copy(with:)``).
    open override func copy() -> Any {
        copy(with: nil)
    }

    // MARK: - Public state

    /// The request currently being loaded (after redirects, the redirected request).
    open var currentRequest: URLRequest? { mutable.withLock { currentRequest(in: $0) } }

    /// The current request as `state` knows it: the original until the engine reports another.
    func currentRequest(in state: MutableState) -> URLRequest? {
        state.replacedRequest.value ?? storedOriginalRequest
    }

    /// The response, once its head arrived.
    open var response: URLResponse? { mutable.withLock { $0.response } }

    /// The task's state.
    open var state: URLSessionTask.State {
        switch mutable.withLock({ $0.lifecycle.state }) {
        case .running: return .running
        case .suspended: return .suspended
        case .canceling: return .canceling
        case .completed: return .completed
        }
    }

    /// Whether the session lists the task (see `TaskLifecycle.isOutstanding`).
    var isOutstanding: Bool { mutable.withLock { $0.lifecycle.isOutstanding } }

    /// The error the task completed with; `nil` while running or on success.
    open var error: (any Error)? { mutable.withLock { $0.error } }

    /// A description set by the app.
    open var taskDescription: String? {
        get { mutable.withLock { $0.taskDescription } }
        set { mutable.withLock { $0.taskDescription = newValue } }
    }

    /// The relative priority, from 0.0 to 1.0 (values outside are clamped). Recorded only: Courier does not order
    /// requests or HTTP/2 streams by it (Apple documents it as a hint that guarantees nothing).
    open var priority: Float {
        get { mutable.withLock { $0.priority } }
        set { mutable.withLock { $0.priority = min(1, max(0, newValue)) } }
    }

    /// Body bytes sent so far.
    open var countOfBytesSent: Int64 { mutable.withLock { $0.countOfBytesSent } }
    /// Body bytes received so far (as received, before content decoding is counted by Darwin; Courier counts
    /// the delivered bytes).
    open var countOfBytesReceived: Int64 { mutable.withLock { $0.countOfBytesReceived } }
    /// Body bytes the task expects to send, or ``NSURLSessionTransferSizeUnknown``.
    open var countOfBytesExpectedToSend: Int64 { mutable.withLock { $0.countOfBytesExpectedToSend } }
    /// Body bytes the task expects to receive (from `Content-Length`), or ``NSURLSessionTransferSizeUnknown`` (also
    /// for a gzip, deflate or br body, which is decoded: `Content-Length` counts the coded bytes, as on Darwin).
    open var countOfBytesExpectedToReceive: Int64 {
        mutable.withLock { $0.countOfBytesExpectedToReceive }
    }

    /// The app's estimate of the bytes to send (a scheduling hint). Recorded only: nothing is scheduled by it.
    open var countOfBytesClientExpectsToSend: Int64 {
        get { mutable.withLock { $0.countOfBytesClientExpectsToSend } }
        set { mutable.withLock { $0.countOfBytesClientExpectsToSend = newValue } }
    }

    /// The app's estimate of the bytes to receive (a scheduling hint). Recorded only: nothing is scheduled by it, in
    /// background sessions either.
    open var countOfBytesClientExpectsToReceive: Int64 {
        get { mutable.withLock { $0.countOfBytesClientExpectsToReceive } }
        set { mutable.withLock { $0.countOfBytesClientExpectsToReceive = newValue } }
    }

    /// The earliest date the task may start; a resumed task waits until then.
    open var earliestBeginDate: Date? {
        get { mutable.withLock { $0.earliestBeginDate } }
        set { mutable.withLock { $0.earliestBeginDate = newValue } }
    }

    /// A delegate for this task only; it receives the task's events in place of the session delegate for the
    /// protocols it adopts. Held strongly until the task completes, then reset to `nil`, as on Darwin.
    open var delegate: (any URLSessionTaskDelegate)? {
        get { mutable.withLock { $0.delegate } }
        set { mutable.withLock { $0.delegate = newValue } }
    }

    /// Whether data is delivered as it arrives (the only mode Courier implements; setting `false` is recorded).
    ///
    /// Until set, Darwin's default: `true`, except for a task that delivers its result to a completion handler (or
    /// an async call that returns the whole body) and for a download task, which default to `false`.
    open var prefersIncrementalDelivery: Bool {
        get { mutable.withLock { $0.prefersIncrementalDelivery } ?? prefersIncrementalDeliveryByDefault }
        set { mutable.withLock { $0.prefersIncrementalDelivery = newValue } }
    }

    /// Darwin's default for ``prefersIncrementalDelivery``: only a task whose body goes to a delegate (or to
    /// `AsyncBytes`, read as it arrives) prefers it.
    private var prefersIncrementalDeliveryByDefault: Bool {
        if self is URLSessionDownloadTask { return false }
        switch completionMode {
        case .delegate, .stream: return true
        case .dataHandler, .collect, .downloadHandler, .downloadCollect: return false
        }
    }

    // MARK: - Control

    /// Starts the task, or continues it after ``suspend()``.
    open func resume() {
        // The engine is created in the same critical section that moves the state to running, so a cancel() or
        // suspend() racing with the first resume() always finds it; if one reaches the engine before the start
        // job, the start job finds the machine no longer idle and does nothing.
        if let background = session.backgroundClient {
            resumeInBackground(background)
            return
        }
        let (starting, proceeding): (TaskEngine?, TaskEngine?) = mutable.withLock { state in
            switch state.lifecycle.resume() {
            case .start:
                let (engine, adapter) = makeEngine(state: state)
                state.engine = engine
                state.adapter = adapter
                return (engine, nil)
            case .proceed:
                return (nil, state.engine)
            default:
                return (nil, nil)
            }
        }
        starting?.start()
        proceeding?.suspensionChanged()
    }

    /// `resume()` in a background session: the first starts the task in the daemon, the next ones resume it there.
    private func resumeInBackground(_ background: BackgroundSessionClient) {
        let (starting, proceeding): (TaskEventAdapter?, Bool) = mutable.withLock { state in
            switch state.lifecycle.resume() {
            case .start:
                let adapter = TaskEventAdapter(task: self)
                state.adapter = adapter
                return (adapter, false)
            case .proceed:
                return (nil, true)
            default:
                return (nil, false)
            }
        }
        if let starting {
            background.start(self, adapter: starting, configuration: session.sessionConfiguration)
        } else if proceeding {
            background.send(.resume(task: taskIdentifier))
        }
    }

    /// Makes this task the mirror of a transfer the background daemon already runs (started by an earlier
    /// process): running (or suspended) without an engine, its events coming to `adapter`.
    func adoptBackgroundTransfer(adapter: TaskEventAdapter, suspended: Bool) {
        mutable.withLock { state in
            _ = state.lifecycle.resume()
            if suspended { _ = state.lifecycle.suspend() }
            state.adapter = adapter
        }
    }

    /// Pauses the task: no bytes are read and no timer fires until ``resume()``.
    open func suspend() {
        let action = mutable.withLock { $0.lifecycle.suspend() }
        if action == .pause {
            if let background = session.backgroundClient {
                background.send(.suspend(task: taskIdentifier))
            }
            mutable.withLock { $0.engine }?.suspensionChanged()
        }
    }

    /// Cancels the task; it completes with `URLError(.cancelled)`, also when it was never resumed.
    open func cancel() {
        carryOutCancel(mutable.withLock { $0.lifecycle.cancel() })
    }

    /// What ``cancel()`` does once the lifecycle moved: `action` is what the move asked for. Apart so that a task
    /// can move its lifecycle first and look at its own state after (see `URLSessionWebSocketTask.cancel()`).
    func carryOutCancel(_ action: TaskLifecycle.Action) {
        switch action {
        case .cancelTransfer:
            if let background = session.backgroundClient {
                background.send(.cancel(task: taskIdentifier, producingResumeData: false))
            }
            mutable.withLock { $0.engine }?.cancel()
        case .completeWithoutTransfer:
            let url = originalRequest?.url
            complete(with: URLErrorMapping.urlError(.cancelled, failingURL: url), body: nil)
        default:
            break
        }
    }

    // MARK: - Engine side

    /// Updates counters and progress under the task's lock.
    func update(_ change: (inout MutableState) -> Void) {
        mutable.withLock { state in change(&state) }
    }

    /// Ends the task exactly once: records the outcome and delivers it through the completion mode. `error` is what
    /// the app sees: a `URLError`, or a custom protocol's own error.
    func complete(with error: (any Error)?, body: Data?, file: URL? = nil) {
        var error = error
        var body = body
        var file = file
        var droppedFile: URL?
        let shouldDeliver: Bool = mutable.withLock { state in
            let cancelled = state.lifecycle.state == .canceling
            guard state.lifecycle.complete() == .deliverCompletion else { return false }
            // Cancelled after the transfer had ended, while its last steps ran (a download's file closed and renamed,
            // a completion on its way to the delegate queue): once `cancel()` returned, the task ends cancelled, as
            // Apple documents ("didCompleteWithError: ... NSURLErrorCancelled"), not with the success it was about
            // to report. The finished file is not handed over.
            if cancelled, error == nil {
                error = URLErrorMapping.urlError(.cancelled, failingURL: storedOriginalRequest?.url)
                body = nil
                droppedFile = file
                file = nil
            }
            state.error = error
            state.engine = nil
            state.adapter = nil
            return true
        }
        guard shouldDeliver else { return }
        if let droppedFile { unlink(droppedFile.path) }
        let units = mutable.withLock { $0.progressUnits }
        let total = units.total < 0 || units.completed > units.total ? max(units.completed, 0) : units.total
        setProgress(total: total, completed: total)
        TaskEventAdapter.deliverCompletion(task: self, error: error, body: body, file: file)
    }

    /// Lets go of the task's own delegate once its completion was delivered, as Darwin does: "Delegate is strongly
    /// referenced until the task completes, after which it is reset to `nil`" (NSURLSession.h). A delegate that
    /// keeps its task (the usual pattern), or a per-call delegate of `bytes(for:delegate:)` kept by the task its
    /// `AsyncBytes` holds, would otherwise live as long as the task, a cycle that is never freed.
    func releaseDelegate() {
        mutable.withLock { $0.delegate = nil }
    }

    /// Ends the task without any delivery (a data task that became a download task).
    func endSilently(removeFromSession: Bool = true) {
        let ended: Bool = mutable.withLock { state in
            guard state.lifecycle.complete() == .deliverCompletion else { return false }
            state.engine = nil
            state.adapter = nil
            return true
        }
        guard ended, removeFromSession else { return }
        if session.registry.remove(self) {
            session.becomeInvalid()
        }
    }

    /// Records progress units; the `Progress` object, if it was ever asked for, follows.
    func setProgress(total: Int64? = nil, completed: Int64? = nil) {
        let progress = mutable.withLock { state in
            if let total { state.progressUnits.total = total }
            if let completed { state.progressUnits.completed = completed }
            return state.progress
        }
        guard let progress else { return }
        writeUnits(to: progress)
    }

    private func bind(_ progress: Progress) {
        progress.isCancellable = true
        progress.isPausable = true
        progress.cancellationHandler = { [weak self] in self?.cancel() }
        ProgressPauseFollower(pause: { [weak self] in self?.suspend() }, resume: { [weak self] in self?.resume() })
            .follow(progress)
    }

    /// Whether the transfer's received bytes feed ``progress`` (upload tasks count sent bytes instead).
    var progressTracksReceivedBytes: Bool { true }

    /// Why this kind of task cannot run yet, or `nil` when it can.
    var unsupportedReason: String? {
        isDetached ? "the task was created with init() and belongs to no session, so it cannot run" : nil
    }

    /// The task's class, identifier and URL, without the URL's user and password: apps print tasks in their logs,
    /// and Darwin's description shows no URL at all.
    open override var description: String {
        "<\(type(of: self)): \(taskIdentifier) \(originalRequest?.url?.textWithoutCredentials() ?? "")>"
    }
}
