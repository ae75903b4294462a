import CourierHTTP
import CourierStore
import Foundation
import Synchronization

/// The app's side of a background session: its connection to `courierd`, the tasks the daemon runs for it, and the
/// events the daemon sends back, which it hands to each task's ``TaskEventAdapter`` — the same adapter an
/// in-process task reports to, so delegate calls, counters and `Progress` behave the same.
///
/// The session attaches when it is created (one blocking round trip, as Darwin's background sessions talk to
/// `nsurlsessiond`; up to ``DaemonLauncher/startTimeout`` when the daemon has to start). Events are read on a thread
/// of the client's own and handed to adapters in order; a journaled event is acknowledged to the daemon from the
/// delegate queue after the delegate call it caused has returned, so a crash before that replays it. When the
/// daemon goes away (a crash, `kill -9`), the client starts it again and re-attaches: the daemon continues every
/// transfer from its journal.
final class BackgroundSessionClient: Sendable {
    struct Binding {
        var task: URLSessionTask
        var adapter: TaskEventAdapter
        /// What created the task in the daemon (`nil` for a task adopted from it): sent again if a restarted daemon
        /// does not know the task.
        var spec: BackgroundTaskSpec? = nil
    }

    private struct State {
        var channel: FrameChannel?
        /// Why the session cannot reach the daemon (tasks fail with it), while it cannot.
        var failure: TransferError?
        var tasks: [Int: Binding] = [:]
        /// The highest journaled event handled: a replay after a reconnection is not handed on twice.
        var lastSequence: Int64 = 0
        var detached = false
        /// The reading thread is handing a message on: a detach meanwhile (the last task's completion invalidating
        /// the session) closes the connection after it, behind the acknowledgements it queued.
        var handling = false
    }

    let identifier: String
    /// The session's launch command, registered with the daemon at each attach.
    private let launch: BackgroundLaunch?
    private let environment: [String: String]
    private let location: BackgroundLocation
    private let state = Mutex(State())
    /// The session, for its delegate, dispatcher and registry; weak: the session owns the client.
    private let owner = Mutex<WeakSession>(WeakSession())

    /// Identifiers whose session in this process was invalidated: a new session with one of them that the daemon
    /// refuses as in use waits for the old connection's close instead of failing its tasks.
    private static let released = Mutex<Set<String>>([])
    /// How many times (50 ms apart) such a session asks again before it gives up: 3 s.
    static let releaseWaitTries = 60
    /// This session's entry in ``released``: its daemon's socket and its identifier.
    private var releaseKey: String { location.socket.path + "\n" + identifier }

    /// How long the app waits for the daemon's answer to an attach (or a one-off request).
    static let answerTimeout = 30

    init(identifier: String, environment: [String: String], launch: BackgroundLaunch?) {
        self.launch = launch
        self.identifier = identifier
        self.environment = environment
        self.location = BackgroundLocation(environment: environment)
    }

    /// Connects, attaches and adopts the tasks the daemon runs for this identifier (blocking).
    func attach(to session: URLSession) {
        owner.withLock { $0.session = session }
        var attached = connectAndAttach()
        var disconnections = 0
        var refusals = 0
        retrying: while case .failure(let error) = attached {
            switch error.urlErrorCode {
            // A daemon that was exiting for idleness as this session connected closes without answering: the next
            // connection starts a new one.
            case .backgroundSessionWasDisconnected where disconnections < 3:
                disconnections += 1
                usleep(100_000)
            // A session of this process with the same identifier was invalidated, and its connection's close has
            // not reached the daemon yet (it goes out from that session's delegate queue, behind what is queued
            // there): the identifier is free once it does, as Darwin promises after invalidation.
            case .backgroundSessionInUseByAnotherProcess
            where refusals < Self.releaseWaitTries && Self.released.withLock({ $0.contains(releaseKey) }):
                refusals += 1
                usleep(50_000)
            default:
                break retrying
            }
            attached = connectAndAttach()
        }
        switch attached {
        case .success(let (channel, next, snapshots)):
            _ = Self.released.withLock { $0.remove(releaseKey) }
            session.registry.advanceIdentifiers(to: next)
            adopt(snapshots, in: session)
            state.withLock { $0.channel = channel }
            startReading(channel)
        case .failure(let error):
            session.logger.error("background session \(identifier): \(error.detail)")
            state.withLock { $0.failure = error }
        }
    }

    /// Why tasks cannot run now, if they cannot.
    var failure: TransferError? { state.withLock { $0.failure } }

    /// Sends `request` on the current connection and returns once it is in the socket: like Darwin's message to
    /// `nsurlsessiond`, a task resumed (or cancelled) just before the app exits still reaches the daemon. Dropped
    /// when there is no connection: the reconnection re-attaches and the daemon's journal is the truth.
    @discardableResult
    func send(_ request: BackgroundRequest) -> Bool {
        state.withLock { $0.channel }?.sendNow(request) ?? false
    }

    /// Sends `request` without waiting (acknowledgements, from the delegate queue).
    func post(_ request: BackgroundRequest) {
        state.withLock { $0.channel }?.send(request)
    }

    /// Closes the connection for good without ending the tasks: the daemon carries on, as when the app exits.
    /// Acknowledgements already queued on the delegate queue go out first (when the session still exists).
    func detach() {
        _ = Self.released.withLock { $0.insert(releaseKey) }
        let channel: FrameChannel? = state.withLock { state in
            state.detached = true
            return state.handling ? nil : state.channel
        }
        if let channel { close(channel) }
    }

    /// Closes `channel` once the delegate queue ran what is queued on it (acknowledgements among it).
    private func close(_ channel: FrameChannel) {
        if let session = owner.withLock({ $0.session }) {
            session.dispatcher.async { channel.finish() }
        } else {
            channel.finish()
        }
    }

    func binding(for task: Int) -> Binding? {
        state.withLock { $0.tasks[task] }
    }

    func bind(_ binding: Binding) {
        state.withLock { $0.tasks[binding.task.taskIdentifier] = binding }
    }

    func unbind(_ task: Int) {
        _ = state.withLock { $0.tasks.removeValue(forKey: task) }
    }

    // MARK: - Connection

    private func connectAndAttach(reattaching: Bool = false) -> Result<
        (FrameChannel, Int, [BackgroundTaskSnapshot]), TransferError
    > {
        let channel: FrameChannel
        do {
            channel = try DaemonLauncher.connect(location: location, environment: environment)
        } catch {
            return .failure(error)
        }
        guard
            channel.sendNow(
                BackgroundRequest.attach(
                    identifier: identifier, processID: getpid(), reattaching: reattaching, launch: launch))
        else {
            return .failure(.urlError(.backgroundSessionWasDisconnected, "courierd closed the connection"))
        }
        // The answer comes at once from a live daemon; one that accepted and hangs must not hold the app for ever.
        channel.setReceiveTimeout(seconds: Self.answerTimeout)
        let reply = channel.receive(BackgroundReply.self)
        channel.setReceiveTimeout(seconds: 0)
        switch reply {
        case .attached(let next, let tasks):
            return .success((channel, next, tasks))
        case .refused(let code, let reason):
            return .failure(.urlError(URLError.Code(rawValue: code) ?? .unknown, reason))
        default:
            return .failure(.urlError(.backgroundSessionWasDisconnected, "courierd did not answer the attach"))
        }
    }

    private func startReading(_ channel: FrameChannel) {
        let thread = Thread { [self] in
            while let reply = channel.receive(BackgroundReply.self) {
                state.withLock { $0.handling = true }
                handle(reply)
                let detached = state.withLock { state in
                    state.handling = false
                    return state.detached
                }
                if detached {
                    close(channel)
                    break
                }
            }
            connectionEnded()
        }
        thread.name = "courier.background.\(identifier)"
        thread.start()
    }

    /// The daemon went away: unless the app detached, start it again and re-attach (a few tries), else fail every
    /// task that was waiting for it.
    private func connectionEnded() {
        let detached = state.withLock { state in
            state.channel = nil
            return state.detached
        }
        guard !detached, let session = owner.withLock({ $0.session }) else { return }
        var lastError = TransferError.urlError(.backgroundSessionWasDisconnected, "the connection to courierd ended")
        for attempt in 0..<5 {
            usleep(UInt32(100_000 << attempt))
            switch connectAndAttach(reattaching: true) {
            case .success(let (channel, next, snapshots)):
                session.registry.advanceIdentifiers(to: next)
                adopt(snapshots, in: session, reattaching: true)
                let stillDetached = state.withLock { state in
                    if !state.detached { state.channel = channel }
                    return state.detached
                }
                if stillDetached {
                    channel.shutDown()
                    return
                }
                recreateLostTasks(knowing: Set(snapshots.map(\.task)), on: channel)
                startReading(channel)
                return
            case .failure(let error):
                lastError = error
            }
        }
        let orphans = state.withLock { state in
            state.failure = lastError
            defer { state.tasks = [:] }
            return Array(state.tasks.values)
        }
        for orphan in orphans {
            let error = URLErrorMapping.urlError(
                .backgroundSessionWasDisconnected, failingURL: orphan.task.originalRequest?.url,
                description: "lost courierd: \(lastError.detail)")
            orphan.adapter.receive(.completed(TaskResult(error: error, file: nil, resumeData: nil)))
        }
    }

    /// After a re-attach: the tasks of this process the new daemon does not know (their `create` was in the socket
    /// when the daemon went away, unread) are created again — the daemon ignores a task it has — or, with nothing to
    /// create them from, fail; never left waiting for events that will not come.
    private func recreateLostTasks(knowing known: Set<Int>, on channel: FrameChannel) {
        let lost = state.withLock { state in
            state.tasks.values.filter { !known.contains($0.task.taskIdentifier) }
        }
        for binding in lost {
            if let spec = binding.spec, channel.sendNow(BackgroundRequest.create(spec)) { continue }
            let identifier = binding.task.taskIdentifier
            // Only if it is still waiting (it may have just failed to start on its own).
            guard state.withLock({ $0.tasks.removeValue(forKey: identifier) != nil }) else { continue }
            let error = URLErrorMapping.urlError(
                .backgroundSessionWasDisconnected, failingURL: binding.task.originalRequest?.url,
                description: "courierd restarted without the task and it could not be created again")
            binding.adapter.receive(.completed(TaskResult(error: error, file: nil, resumeData: nil)))
        }
    }

    // MARK: - Events (on the reading thread, in order)

    private func handle(_ reply: BackgroundReply) {
        guard let session = owner.withLock({ $0.session }) else { return }
        switch reply {
        case .event(let event):
            deliver(event, in: session)
        case .eventsDrained:
            session.dispatcher.async {
                session.delegate?.urlSessionDidFinishEvents(
                    forBackgroundURLSession: session)
            }
        case .challenge(let challenge):
            ask(challenge, in: session)
        case .attached, .refused, .listed, .status:
            break
        }
    }

    private func deliver(_ event: BackgroundEvent, in session: URLSession) {
        if event.sequence > 0 {
            let repeated = state.withLock { state in
                defer { state.lastSequence = max(state.lastSequence, event.sequence) }
                return event.sequence <= state.lastSequence
            }
            if repeated {
                // Its first delivery's delegate calls may still be waiting on the delegate queue (a replay after the
                // daemon restarted): the acknowledgement goes behind them, since the daemon deletes the file on it.
                let sequence = event.sequence
                let channel = state.withLock { $0.channel }
                session.dispatcher.async {
                    _ = channel?.sendNow(BackgroundRequest.delivered(sequence: sequence))
                }
                return
            }
        }
        guard let binding = binding(for: event.task) else {
            // A task this process does not know (it was not resumed here): acknowledge so the daemon forgets it.
            if event.sequence > 0 { post(.delivered(sequence: event.sequence)) }
            return
        }
        let adapter = binding.adapter
        switch event.kind {
        case .response(let response):
            adapter.receive(.response(response.response))
        case .resumed(let offset, let total):
            adapter.receive(.downloadResumed(offset: offset, expectedTotal: total))
        case .wrote(let bytes, let total, let expected):
            adapter.receive(.downloadWrote(bytes: bytes, totalWritten: total, totalExpected: expected))
        case .sent(let bytes, let total, let expected):
            if binding.task.countOfBytesExpectedToSend != expected {
                adapter.receive(.attemptStarted(expectedToSend: expected))
            }
            adapter.receive(.sentBodyData(bytesSent: bytes, totalBytesSent: total))
        case .completed(let outcome):
            if let response = outcome.response, binding.task.response.map(CodableResponse.init) != response {
                adapter.receive(.response(response.response))
            }
            unbind(event.task)
            // An upload's response body, as an in-process upload task delivers it (`didReceive` data).
            if let body = outcome.bodyFile.flatMap({ FileManager.default.contents(atPath: $0) }), !body.isEmpty {
                adapter.receive(.data(body))
            }
            let file = outcome.file.map { URL(fileURLWithPath: $0) }
            adapter.receive(.completed(TaskResult(error: outcome.error, file: file, resumeData: outcome.resumeData)))
            // After the completion's delegate calls (queued before this job) have returned.
            let sequence = event.sequence
            let channel = state.withLock { $0.channel }
            session.dispatcher.async {
                if let file { try? FileManager.default.removeItem(at: file) }
                // On the channel the event came on (a detach queued meanwhile closes it after this), and into the
                // socket before the job ends: an app that exits right after its delegate returned is not asked again.
                if sequence > 0 { _ = channel?.sendNow(BackgroundRequest.delivered(sequence: sequence)) }
            }
        }
    }
}

extension BackgroundSessionClient {
    /// A task in the daemon met an authentication challenge: the task's delegate (or the session's) is asked on the
    /// delegate queue, as for an in-process task; without one, default handling. On the first try the app's own
    /// `urlCredentialStorage` proposes its default credential for the space (the daemon knows only the storage's
    /// file, not the credentials kept for the session in memory), and default handling answers with it.
    fileprivate func ask(_ question: BackgroundChallenge, in session: URLSession) {
        let answerOnce = CompletionOnce()
        let reply: @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void = { [self] in
            guard answerOnce.claim() else { return }
            send(.answer(challenge: question.id, BackgroundChallengeAnswer(disposition: $0, credential: $1)))
        }
        let task = binding(for: question.task)?.task
        let storage = session.sessionConfiguration.urlCredentialStorage
        // The storage may be the app's subclass: user code, so on the delegate queue like the delegate.
        session.dispatcher.async {
            let stored =
                question.previousFailureCount == 0 ? storage?.defaultCredential(for: question.protectionSpace) : nil
            let challenge = question.challenge(sender: CompletionHandlerChallengeSender(), proposing: stored)
            let answer: @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void = {
                disposition, credential in
                if disposition == .performDefaultHandling, let stored {
                    reply(.useCredential, stored)
                } else {
                    reply(disposition, credential)
                }
            }
            guard let task, let delegate = task.resolvedDelegate(URLSessionTaskDelegate.self) else {
                return answer(.performDefaultHandling, nil)
            }
            delegate.urlSession(session, task: task, didReceive: challenge) { answer($0, $1) }
        }
    }
}

/// A weak reference to a session, in a lock.
struct WeakSession: Sendable {
    weak var session: URLSession?
}
