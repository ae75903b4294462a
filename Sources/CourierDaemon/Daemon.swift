import Courier
import CourierHTTP
import CourierStore
import Foundation
import Logging

/// The background-transfer service: the tasks of every background session of this user, their journal, the apps
/// attached to them and the events waiting for apps that are not.
///
/// Everything here runs on one serial queue (``queue``): client requests, the attempts' events, timers. The journal
/// is written before the daemon acts on a change (a task created, cancelled, a checkpoint, an outcome), so a crash
/// at any point leaves a journal the next daemon continues from. No user code runs in the daemon.
package final class Daemon: @unchecked Sendable {
    let queue = DispatchQueue(label: "courierd")
    /// Where partial files are flushed to disk (see `checkpoint`): never the daemon's queue.
    let flushQueue = DispatchQueue(label: "courierd.flush")
    let journal: BackgroundJournal
    let location: BackgroundLocation
    let settings: DaemonSettings
    let logger: Logger
    let retryPolicy: RetryPolicy

    /// Every unfinished task, and finished ones until their events are delivered.
    var records: [TaskKey: TaskRecord] = [:]
    /// Journaled tasks this version cannot read (a later version's rows): left alone — their files, their events —
    /// for the daemon that wrote them.
    var unreadable: Set<TaskKey> = []
    /// The running attempt of each task that has one.
    var attempts: [TaskKey: TransferAttempt] = [:]
    /// Progress since each running download's last checkpoint.
    var checkpoints: [TaskKey: Checkpoint] = [:]
    var clients: [Int: DaemonClient] = [:]
    var attachments: [String: DaemonClient] = [:]
    /// For each session attached while tasks of an earlier process were unfinished or had undelivered events: those
    /// tasks. When the last one's events went out, the app is told (`urlSessionDidFinishEvents`).
    var awaitingDrain: [String: Set<Int>] = [:]
    /// Sessions whose launch command ran and that no process attached to since.
    var launched: Set<String> = []
    /// Challenges sent to apps and not answered yet, and the credentials apps gave (see `Daemon+Challenges`).
    var pendingChallenges: [UInt64: PendingChallenge] = [:]
    var nextChallenge: UInt64 = 0
    var rememberedCredentials: [CredentialKey: URLCredential] = [:]
    private var nextClient = 1
    /// When the daemon last had something to do (a client or a transfer).
    var lastBusy = Date()
    private var pumpScheduled: Date?
    var progressPollScheduled = false

    /// A running download's last durable checkpoint, and the progress not yet sent to its app.
    struct Checkpoint {
        var bytes: Int64 = 0
        var time = Date()
        /// The received count last reported to the app, and the sent count.
        var reported: Int64 = 0
        var sent: Int64 = 0
        /// When the partial file was last flushed to disk.
        var flushed = Date()
    }

    package init(location: BackgroundLocation, settings: DaemonSettings, logger: Logger) throws {
        self.location = location
        self.settings = settings
        self.logger = logger
        self.retryPolicy = RetryPolicy(base: settings.retryBase, maximum: settings.retryMaximum)
        journal = try BackgroundJournal(at: location.journal, logger: logger)
    }

    /// Reads the journal and continues every unfinished task (on the queue).
    package func recover() {
        queue.sync {
            let decoder = JSONDecoder()
            for row in (try? journal.tasks(includingFinished: true)) ?? [] {
                guard let record = try? decoder.decode(TaskRecord.self, from: row.record) else {
                    logger.warning("journal: task \(row.identifier)/\(row.task) cannot be read; skipped")
                    unreadable.insert(TaskKey(identifier: row.identifier, task: row.task))
                    continue
                }
                records[record.key] = record
            }
            logger.info("recovered \(records.count) tasks")
            sweep()
            pump()
            scheduleIdleCheck()
        }
    }

    // MARK: - Clients

    /// A new connection (already admitted by its peer's user id); returns its serial.
    func connected(_ channel: FrameChannel) -> DaemonClient {
        queue.sync {
            let client = DaemonClient(channel: channel, serial: nextClient)
            nextClient += 1
            clients[client.serial] = client
            lastBusy = Date()
            return client
        }
    }

    func disconnected(_ client: DaemonClient) {
        queue.async { [self] in
            clients.removeValue(forKey: client.serial)
            if let identifier = client.attached, attachments[identifier] === client {
                attachments.removeValue(forKey: identifier)
                awaitingDrain.removeValue(forKey: identifier)
                abandonChallenges(of: identifier)
                logger.info("session \(identifier) detached")
            }
            lastBusy = Date()
        }
    }

    func received(_ request: BackgroundRequest, from client: DaemonClient) {
        queue.async { [self] in
            lastBusy = Date()
            handle(request, from: client)
        }
    }

    private func handle(_ request: BackgroundRequest, from client: DaemonClient) {
        switch request {
        case .attach(let identifier, let processID, let reattaching, let launch):
            attach(client, to: identifier, processID: processID, reattaching: reattaching, launch: launch)
        case .create(let spec):
            guard let identifier = client.attached else { return refuse(client, "attach first") }
            create(spec, in: identifier)
        case .resume(let task):
            guard let identifier = client.attached else { return refuse(client, "attach first") }
            resume(TaskKey(identifier: identifier, task: task))
        case .suspend(let task):
            guard let identifier = client.attached else { return refuse(client, "attach first") }
            suspend(TaskKey(identifier: identifier, task: task))
        case .cancel(let task, let producingResumeData):
            guard let identifier = client.attached else { return refuse(client, "attach first") }
            cancel(TaskKey(identifier: identifier, task: task), producingResumeData: producingResumeData)
        case .cancelQueued(let identifier, let task):
            cancel(TaskKey(identifier: identifier, task: task), producingResumeData: false)
            client.send(.listed(records.values.filter { $0.identifier == identifier }.map(\.snapshot)))
        case .delivered(let sequence):
            guard let identifier = client.attached else { return }
            delivered(sequence, identifier: identifier)
        case .answer(let challenge, let answer):
            guard let identifier = client.attached else { return }
            answered(challenge, with: answer, from: identifier)
        case .list(let identifier):
            let listed = records.values.filter { identifier == nil || $0.identifier == identifier }
                .sorted { ($0.identifier, $0.spec.task) < ($1.identifier, $1.spec.task) }
            client.send(.listed(listed.map(\.snapshot)))
        case .status:
            client.send(.status(processID: getpid(), tasks: records.count, clients: clients.count))
        case .stop:
            logger.info("stop requested")
            _ = client.channel.sendNow(BackgroundReply.status(processID: getpid(), tasks: records.count, clients: 0))
            exitNow()
        }
    }

    private func refuse(_ client: DaemonClient, _ reason: String) {
        client.send(.refused(code: URLError.Code.unsupportedURL.rawValue, reason: reason))
    }

    private func attach(
        _ client: DaemonClient, to identifier: String, processID: Int32, reattaching: Bool, launch: BackgroundLaunch?
    ) {
        if let holder = attachments[identifier], holder !== client {
            client.send(
                .refused(
                    code: URLError.Code.backgroundSessionInUseByAnotherProcess.rawValue,
                    reason: "the background session \(identifier) is in use by another process"))
            return
        }
        client.attached = identifier
        attachments[identifier] = client
        launched.remove(identifier)
        // A session without a launch command (`courier queue wait`, the usual command itself) keeps the one
        // registered; one with launch events off sends an empty command, which nothing runs.
        if let launch {
            do {
                try journal.setLaunch(try? JSONEncoder().encode(launch), for: identifier)
            } catch {
                logger.error("journal: \(error)")
            }
        }
        logger.info("session \(identifier) attached by process \(processID)")
        let next = (try? journal.nextTaskIdentifier(for: identifier)) ?? 1
        let tasks = records.values.filter { $0.identifier == identifier }.sorted { $0.spec.task < $1.spec.task }
        client.send(.attached(nextTaskIdentifier: next, tasks: tasks.map(\.snapshot)))
        // Not the events of tasks this version cannot read: the app, which does not know them, would acknowledge
        // them and the daemon forget them (and their files) for good.
        let pending = ((try? journal.pendingEvents(identifier: identifier)) ?? []).filter {
            !unreadable.contains(TaskKey(identifier: identifier, task: $0.task))
        }
        let decoder = JSONDecoder()
        for event in pending {
            guard let kind = try? decoder.decode(BackgroundEvent.Kind.self, from: event.body) else { continue }
            client.send(.event(BackgroundEvent(sequence: event.sequence, task: event.task, kind: kind)))
        }
        let unfinished = Set(tasks.filter { $0.state != .completed }.map(\.spec.task))
        if reattaching {
            return
        } else if !unfinished.isEmpty {
            awaitingDrain[identifier] = unfinished
        } else if !pending.isEmpty {
            client.send(.eventsDrained)
        }
    }

    /// A task an attached app was waiting for ended (its completion went out): the last one tells the app that
    /// every event of its earlier tasks was delivered.
    func awaitedTaskEnded(_ key: TaskKey) {
        guard var waiting = awaitingDrain[key.identifier], waiting.remove(key.task) != nil else { return }
        if waiting.isEmpty {
            awaitingDrain.removeValue(forKey: key.identifier)
            attachments[key.identifier]?.send(.eventsDrained)
        } else {
            awaitingDrain[key.identifier] = waiting
        }
    }

    private func delivered(_ sequence: Int64, identifier: String) {
        do {
            try journal.delivered(sequence: sequence, identifier: identifier)
        } catch {
            logger.error("journal: \(error)")
        }
        // Forget finished tasks whose events all went out, with what is left of their files.
        let remaining = Set(((try? journal.tasks(identifier: identifier, includingFinished: true)) ?? []).map(\.task))
        for (key, record) in records where key.identifier == identifier && record.state == .completed {
            guard !remaining.contains(key.task) else { continue }
            records.removeValue(forKey: key)
            // A partial file the app holds resume data for stays until a task resumes it (or the sweep).
            removeFiles(of: key, keepingPartial: record.outcome?.resumeData != nil)
        }
    }

    func send(_ event: BackgroundEvent, to identifier: String) {
        attachments[identifier]?.send(.event(event))
    }

    /// Deletes a task's folder and finished file (after its app received it, or the task ended without one).
    func removeFiles(of key: TaskKey, keepingPartial: Bool = false) {
        let folder = location.transferFolder(key.identifier, task: key.task)
        let finished = finishedFile(for: key)
        DispatchQueue.global().async {
            if !keepingPartial { try? FileManager.default.removeItem(at: folder) }
            unlink(finished.path)
        }
    }

    /// How long a partial file kept for resume data waits for a task to resume it.
    static let partialFileLifetime: TimeInterval = 7 * 24 * 3600

    /// Deletes the folders of tasks the journal no longer has that were left for resume data longer than
    /// ``partialFileLifetime``, and finished files no task owns (a crash between the rename and the journal).
    func sweep() {
        let keys = Set(records.keys).union(unreadable)
        let known = Set(keys.map { BackgroundLocation.component($0.identifier) + "/task-\($0.task)" })
        let knownFinished = Set(
            keys.map { BackgroundLocation.component($0.identifier) + "/finished-\($0.task).download" })
        let data = location.dataFolder
        DispatchQueue.global().async {
            let manager = FileManager.default
            let cutoff = Date().addingTimeInterval(-Self.partialFileLifetime)
            for session in (try? manager.contentsOfDirectory(atPath: data.path)) ?? [] {
                let folder = data.appendingPathComponent(session)
                for name in (try? manager.contentsOfDirectory(atPath: folder.path)) ?? [] {
                    let path = session + "/" + name
                    let item = folder.appendingPathComponent(name)
                    if name.hasPrefix("finished-"), !knownFinished.contains(path) {
                        unlink(item.path)
                    } else if name.hasPrefix("task-"), !known.contains(path),
                        let modified = (try? manager.attributesOfItem(atPath: item.path))?[.modificationDate] as? Date,
                        modified < cutoff
                    {
                        try? manager.removeItem(at: item)
                    }
                }
            }
        }
    }

    func finishedFile(for key: TaskKey) -> URL {
        location.sessionFolder(key.identifier).appendingPathComponent("finished-\(key.task).download")
    }

    // MARK: - Timers

    /// Runs `pump` at `date` (or sooner if already scheduled sooner).
    func schedulePump(at date: Date) {
        if let scheduled = pumpScheduled, scheduled <= date { return }
        pumpScheduled = date
        queue.asyncAfter(deadline: .now() + max(0, date.timeIntervalSinceNow)) { [self] in
            if let scheduled = pumpScheduled, scheduled <= Date() { pumpScheduled = nil }
            pump()
        }
    }

    private func scheduleIdleCheck() {
        queue.asyncAfter(deadline: .now() + min(1, max(0.05, settings.idleTimeout / 4))) { [self] in
            let busy = !clients.isEmpty || !attempts.isEmpty || records.values.contains { $0.state != .completed }
            if busy { lastBusy = Date() }
            if Date().timeIntervalSince(lastBusy) >= settings.idleTimeout {
                logger.info("idle for \(Int(settings.idleTimeout)) s: exiting")
                exitNow()
            }
            scheduleIdleCheck()
        }
    }

    /// Exits at once; the journal holds everything needed to continue.
    func exitNow() -> Never {
        unlink(location.pidFile.path)
        unlink(location.publishedSocketFile.path)
        exit(0)
    }
}
