import Courier
import CourierHTTP
import CourierStore
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Running the tasks: creation, scheduling, suspension and cancellation, durable checkpoints of downloads, retries,
/// and each task's outcome. On the daemon's queue.
extension Daemon: TransferAttemptObserver {
    /// The shortest time between two progress messages of a task to its app.
    static let progressInterval: TimeInterval = 0.05

    func create(_ spec: BackgroundTaskSpec, in identifier: String) {
        let key = TaskKey(identifier: identifier, task: spec.task)
        // Identifiers come from the app: a hostile one must not overflow the journal's numbering.
        guard records[key] == nil, spec.task > 0, spec.task < Int(Int32.max) else { return }
        var record = TaskRecord(identifier: identifier, spec: spec, now: Date())
        if let resumeData = spec.resumeData {
            adoptPartialFile(of: resumeData, into: &record)
        }
        guard save(record) else {
            let outcome = BackgroundOutcome(
                errorCode: URLError.Code.cannotWriteToFile.rawValue,
                errorDescription: "courierd cannot write its journal", failingURL: spec.request.url)
            send(BackgroundEvent(sequence: 0, task: spec.task, kind: .completed(outcome)), to: identifier)
            return
        }
        records[key] = record
        pump()
    }

    func resume(_ key: TaskKey) {
        guard var record = records[key], record.state == .suspended else { return }
        record.state = .running
        records[key] = record
        _ = save(record)
        if let attempt = attempts[key] { attempt.resume() } else { pump() }
    }

    func suspend(_ key: TaskKey) {
        guard var record = records[key], record.state == .running || record.state == .waiting else { return }
        record.state = .suspended
        records[key] = record
        _ = save(record)
        attempts[key]?.suspend()
    }

    func cancel(_ key: TaskKey, producingResumeData: Bool) {
        guard var record = records[key], record.state != .completed else { return }
        if let attempt = attempts[key] {
            record.cancelRequested = true
            records[key] = record
            attempt.cancel(producingResumeData: producingResumeData)
            return
        }
        // Waiting for a retry or its time: the partial file on disk still makes resume data when asked for.
        let folder = location.transferFolder(key.identifier, task: key.task)
        let resumeData = producingResumeData ? durableResumeData(record, folder: folder) : nil
        finish(
            &record,
            outcome: BackgroundOutcome(
                errorCode: URLError.Code.cancelled.rawValue, errorDescription: "cancelled",
                failingURL: record.spec.request.url, resumeData: resumeData))
    }

    /// Starts the tasks that may run now, up to the limit (discretionary tasks last, then the oldest first), and
    /// sets a timer for the next one that waits for its time. With every slot taken it does nothing: the end of an
    /// attempt pumps again. It runs after every attempt, so it looks at each record once and copies none (a record
    /// is large; copying and sorting them all for every one of 1,000 queued downloads cost more than the downloads).
    func pump() {
        let free = settings.maximumTransfers - attempts.count
        guard free > 0 else { return }
        let now = Date()
        // The best `free` candidates, ordered by (discretionary, created).
        var chosen: [(key: TaskKey, discretionary: Bool, created: Date)] = []
        var nextWake: Date?
        for index in records.values.indices {
            let state = records.values[index].state
            guard state == .running || state == .waiting else { continue }
            let key = records.values[index].key
            guard attempts[key] == nil else { continue }
            if let notBefore = records.values[index].notBefore, notBefore > now {
                nextWake = min(nextWake ?? notBefore, notBefore)
                continue
            }
            let candidate = (
                key: key, discretionary: records.values[index].spec.settings.isDiscretionary,
                created: records.values[index].created
            )
            let position =
                chosen.firstIndex {
                    (candidate.discretionary ? 1 : 0, candidate.created) < ($0.discretionary ? 1 : 0, $0.created)
                } ?? chosen.count
            guard position < free else { continue }
            chosen.insert(candidate, at: position)
            if chosen.count > free { chosen.removeLast() }
        }
        var endedAtOnce = false
        for candidate in chosen {
            if let record = records[candidate.key] { startAttempt(record) }
            if attempts[candidate.key] == nil { endedAtOnce = true }
        }
        if let nextWake { schedulePump(at: nextWake) }
        // A chosen task that ended at once (its resource timeout passed, its folder could not be made) left its slot
        // free: the next candidates get it. Ended tasks are not candidates, so this ends.
        if endedAtOnce { pump() }
    }

    private func startAttempt(_ stored: TaskRecord) {
        var record = stored
        let key = record.key
        if Date() >= record.deadline {
            return finish(
                &record,
                outcome: BackgroundOutcome(
                    errorCode: URLError.Code.timedOut.rawValue,
                    errorDescription: "the background task's resource timeout passed",
                    failingURL: record.spec.request.url))
        }
        let folder = location.transferFolder(key.identifier, task: key.task)
        do {
            try PrivateFolder.prepare(
                location.sessionFolder(key.identifier), purpose: "background session folder", hint: "")
            try PrivateFolder.prepare(folder, purpose: "background task folder", hint: "")
        } catch {
            return finish(
                &record,
                outcome: BackgroundOutcome(
                    errorCode: URLError.Code.cannotCreateFile.rawValue, errorDescription: error.detail,
                    failingURL: record.spec.request.url))
        }
        let resumeData = durableResumeData(record, folder: folder)
        let offset = resumeData == nil ? 0 : record.resumeOffset(boot: BootIdentifier.current)
        // Only the file this attempt continues may be there: a crash can leave another (an attempt's new file, a
        // restored copy not journaled yet), and checkpoints look for the one file in the folder.
        Self.removeFiles(in: folder, except: resumeData == nil ? nil : record.partialFileName)
        PartialFileKeeper.keep(resumeData == nil ? nil : record.partialFileName, in: folder)
        if resumeData == nil, record.partialFileName != nil {
            // The partial file cannot be continued: start over, never splice.
            record.forgetPartial()
        }
        record.state = .running
        record.notBefore = nil
        // An upload starts over: its byte count with it.
        record.bytesSent = 0
        records[key] = record
        _ = save(record)
        let attempt = TransferAttempt(
            key: key, record: record, folder: folder, finishedFile: finishedFile(for: key), resumeData: resumeData,
            resumedFrom: offset, resumedFileName: record.partialFileName, queue: queue, observer: self)
        attempts[key] = attempt
        checkpoints[key] = Checkpoint(bytes: offset, reported: offset)
        scheduleProgressPoll()
        logger.info("task \(key.identifier)/\(key.task): attempt from byte \(offset)")
        attempt.start()
    }

    /// The names of the engine's files in a task's folder (dot files are the daemon's own).
    static func engineFiles(in folder: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter { !$0.hasPrefix(".") }
    }

    /// Deletes the engine's files in a task's folder but `kept`.
    static func removeFiles(in folder: URL, except kept: String?) {
        for name in engineFiles(in: folder) where name != kept {
            unlink(folder.appendingPathComponent(name).path)
        }
    }

    /// Resume data for the durable part of a download, after checking the partial file is still there and holds
    /// at least that many bytes (extra bytes past the checkpoint are cut by the engine), or `nil`.
    func durableResumeData(_ record: TaskRecord, folder: URL) -> Data? {
        let offset = record.resumeOffset(boot: BootIdentifier.current)
        guard case .download = record.spec.kind, let name = record.partialFileName, offset > 0,
            record.entityTag != nil || record.lastModified != nil,
            let url = record.downloadURL ?? record.spec.request.url
        else { return nil }
        var info = stat()
        guard lstat(folder.appendingPathComponent(name).path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG,
            Int64(info.st_size) >= offset
        else { return nil }
        let original = record.spec.request
        var headers: [String: String] = [:]
        for field in original.headers where field.count == 2 {
            let name = field[0].lowercased()
            if name != "range" && name != "if-range" { headers[field[0]] = field[1] }
        }
        // The request's cookie handling too: a continuation of a download the app kept from its cookies (a
        // third-party host) must not send them, or store what that host sets.
        guard
            let stored = try? ResumeData.Request(
                url: original.url ?? url, method: original.method ?? "GET", headers: headers,
                timeoutInterval: original.timeoutInterval, httpShouldHandleCookies: original.httpShouldHandleCookies)
        else { return nil }
        return try? ResumeData(
            downloadURL: url, bytesReceived: offset, entityTag: record.entityTag,
            serverDownloadDate: record.lastModified, tempFileName: name, originalRequest: stored,
            currentRequest: stored, expectedTotalLength: record.expectedTotal
        ).encoded()
    }

    /// Resume data the app handed in (from this daemon's cancelled or failed task): its partial file, left in
    /// that task's folder, moves into the new task's folder and becomes its durable part.
    ///
    /// Only a download file's name (`CFNetworkDownload_*.tmp`, the only name the engine continues) is looked for, and
    /// only a regular file of this user is moved: the resume data comes from the app, and must not move the
    /// daemon's own entries (`.kept-partial`) or, through `rename` (which moves a link itself), a symbolic link.
    private func adoptPartialFile(of resumeData: Data, into record: inout TaskRecord) {
        guard let data = try? ResumeData(decoding: resumeData), DownloadDirectory.isDownloadFileName(data.tempFileName)
        else {
            return
        }
        let sessionFolder = location.sessionFolder(record.identifier)
        let target = location.transferFolder(record.identifier, task: record.spec.task)
        let folders = (try? FileManager.default.contentsOfDirectory(atPath: sessionFolder.path)) ?? []
        // Never from a task that still runs: two tasks would write one file.
        let running = Set(
            records.values.filter { $0.identifier == record.identifier && $0.state != .completed }.map {
                "task-\($0.spec.task)"
            })
        for folder in folders where folder.hasPrefix("task-") && !running.contains(folder) {
            let source = sessionFolder.appendingPathComponent(folder).appendingPathComponent(data.tempFileName)
            var info = stat()
            guard lstat(source.path, &info) == 0 else { continue }
            guard (info.st_mode & S_IFMT) == S_IFREG, info.st_uid == geteuid() else { return }
            try? PrivateFolder.prepare(target, purpose: "background task folder", hint: "")
            guard rename(source.path, target.appendingPathComponent(data.tempFileName).path) == 0 else { return }
            record.adoptPartial(data, boot: BootIdentifier.current)
            return
        }
    }

    // MARK: - Progress

    /// Polls every running attempt's counters every ``progressInterval`` while any runs: progress to the attached
    /// apps, responses, and durable checkpoints.
    func scheduleProgressPoll() {
        guard !progressPollScheduled, !attempts.isEmpty else { return }
        progressPollScheduled = true
        queue.asyncAfter(deadline: .now() + Self.progressInterval) { [self] in
            progressPollScheduled = false
            for (key, attempt) in attempts {
                polled(key, attempt: attempt, progress: attempt.poll())
            }
            scheduleProgressPoll()
        }
    }

    private func polled(_ key: TaskKey, attempt: TransferAttempt, progress: AttemptProgress) {
        if let response = progress.newResponse {
            attemptReceivedResponse(key, attempt: attempt, response: response)
        }
        guard var record = records[key], var last = checkpoints[key] else { return }
        // The counters of a response the daemon will retry are not the task's (a 503's body is not the download).
        if willRetry(attempt.task.response, record: record) { return }
        if progress.sent > last.sent {
            last.sent = progress.sent
            checkpoints[key] = last
            send(
                BackgroundEvent(
                    sequence: 0, task: key.task,
                    kind: .sent(
                        bytes: progress.sent - record.bytesSent, totalSent: progress.sent,
                        totalExpected: progress.expectedToSend)),
                to: key.identifier)
            record.bytesSent = progress.sent
            records[key] = record
        }
        guard progress.received > record.bytesReceived || progress.received < last.reported else { return }
        let bytes = progress.received - last.reported
        if progress.received > record.bytesReceived { record.failuresWithoutProgress = 0 }
        record.bytesReceived = progress.received
        record.expectedTotal = progress.expectedToReceive
        records[key] = record
        last.reported = progress.received
        checkpoints[key] = last
        // The checkpoint first: an app that hears of the bytes knows any checkpoint they were due is journaled.
        if progress.received - last.bytes >= settings.checkpointBytes
            || (progress.received > last.bytes && Date().timeIntervalSince(last.time) >= settings.checkpointInterval)
        {
            checkpoint(key, attempt: attempt)
        }
        send(
            BackgroundEvent(
                sequence: 0, task: key.task,
                kind: .wrote(bytes: bytes, totalWritten: progress.received, totalExpected: progress.expectedToReceive)),
            to: key.identifier)
    }

    /// The attempt's response: kept for the task and sent to the app, unless the daemon will retry it. The first
    /// response of an attempt that continued a partial file says whether it was continued (206) or starts over.
    func attemptReceivedResponse(_ key: TaskKey, attempt: TransferAttempt, response: URLResponse) {
        let codable = CodableResponse(response)
        guard attempts[key] === attempt, var record = records[key], record.response != codable else { return }
        let http = response as? HTTPURLResponse
        // A response the daemon will retry is not the task's: the app never sees it.
        if willRetry(response, record: record) { return }
        record.response = codable
        records[key] = record
        send(BackgroundEvent(sequence: 0, task: key.task, kind: .response(codable)), to: key.identifier)
        guard attempt.resumedFrom > 0 else { return }
        let continued = http?.statusCode == 206
        if !continued {
            // The server sent the whole representation again (the validator changed): the old bytes are gone.
            record.forgetPartial()
            records[key] = record
            checkpoints[key] = Checkpoint()
            _ = save(record)
        }
        send(
            BackgroundEvent(
                sequence: 0, task: key.task,
                kind: .resumed(offset: continued ? attempt.resumedFrom : 0, expectedTotal: record.expectedTotal)),
            to: key.identifier)
    }

    /// Whether `response` is one the daemon retries (a `5xx` with `Retry-After`) rather than delivers.
    private func willRetry(_ response: URLResponse?, record: TaskRecord) -> Bool {
        guard let http = response as? HTTPURLResponse else { return false }
        return retryPolicy.delay(
            status: http.statusCode, retryAfter: http.value(forHTTPHeaderField: "Retry-After"), now: Date(),
            deadline: record.deadline) != nil
    }

    /// Journals how many bytes of the partial file are written, with the validators that name the representation,
    /// so that after a crash of the daemon the download continues from exactly there (or starts over); the written
    /// count alone is trusted only on the same boot of the machine (the page cache held it). Every
    /// ``DaemonSettings/flushInterval`` the file is also flushed to disk, which a power cut cannot undo, and the
    /// flushed length journaled once the flush returned. The flush runs on a queue of its own: it waits for the disk
    /// (seconds, for a large file), and the daemon's queue serves every other transfer and app meanwhile. A flush
    /// makes the transfer wait for the disk: on this machine, one every 256 MiB cost a sixth of a 1 GiB loopback
    /// download.
    private func checkpoint(_ key: TaskKey, attempt: TransferAttempt) {
        guard var record = records[key], var last = checkpoints[key],
            let response = attempt.task.response as? HTTPURLResponse,
            let partial = Self.partialFile(in: attempt.folder, for: attempt, response: response, record: record)
        else { return }
        let descriptor = open(partial.path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            close(descriptor)
            return
        }
        let size = Int64(info.st_size)
        let validators = Resumability(
            method: attempt.task.currentRequest?.httpMethod ?? "GET",
            rangeRequested: record.spec.request.request.value(forHTTPHeaderField: "Range") != nil,
            status: response.statusCode,
            responseHeader: { response.value(forHTTPHeaderField: $0) }, bytesReceived: size)
        guard let validators else {
            close(descriptor)
            record.forgetPartial()
            records[key] = record
            return
        }
        if record.partialFileName != partial.lastPathComponent { record.durableBytes = 0 }
        record.partialFileName = partial.lastPathComponent
        record.writtenBytes = size
        record.writtenBoot = BootIdentifier.current
        record.entityTag = validators.entityTag
        record.lastModified = validators.lastModified
        record.downloadURL = attempt.task.currentRequest?.url
        records[key] = record
        last.bytes = record.bytesReceived
        last.time = Date()
        let flushes = Date().timeIntervalSince(last.flushed) >= settings.flushInterval
        if flushes { last.flushed = Date() }
        checkpoints[key] = last
        _ = save(record)
        guard flushes else {
            close(descriptor)
            return
        }
        let name = partial.lastPathComponent
        let entityTag = validators.entityTag
        flushQueue.async { [self] in
            let flushed = fdatasync(descriptor) == 0
            close(descriptor)
            queue.async { [self] in
                // Still the same file of the same representation: its first `size` bytes are on disk.
                guard flushed, var record = records[key], record.state != .completed,
                    record.partialFileName == name, record.entityTag == entityTag, record.durableBytes < size
                else { return }
                record.durableBytes = size
                records[key] = record
                _ = save(record)
            }
        }
    }

    /// The partial file of the attempt's current response: the only file in the task's folder, and the one the
    /// attempt continued when the response is a 206, never that one otherwise (the engine deletes it and starts a
    /// new file; a checkpoint in between must not name the old bytes with the new validator). `nil` when unsure.
    static func partialFile(
        in folder: URL, for attempt: TransferAttempt, response: HTTPURLResponse, record: TaskRecord
    ) -> URL? {
        let names = engineFiles(in: folder)
        guard names.count == 1, let name = names.first else { return nil }
        if attempt.resumedFrom > 0, let continued = attempt.resumedFileName {
            guard (response.statusCode == 206) == (name == continued) else { return nil }
        }
        return folder.appendingPathComponent(name)
    }

    func attemptEnded(_ key: TaskKey, attempt: TransferAttempt, response: URLResponse?, file: URL?, error: URLError?) {
        if let response { attemptReceivedResponse(key, attempt: attempt, response: response) }
        guard attempts[key] === attempt else { return }
        // The last progress, so that the app's counters end where the transfer did.
        polled(key, attempt: attempt, progress: attempt.poll())
        guard var record = records[key] else { return }
        attempts.removeValue(forKey: key)
        checkpoints.removeValue(forKey: key)
        attempt.finish()
        defer { pump() }
        let now = Date()
        let url = attempt.task.currentRequest?.url ?? record.spec.request.url
        if let error {
            PartialFileKeeper.discard(in: attempt.folder)
            if record.cancelRequested || error.code == .cancelled {
                return finish(&record, outcome: Self.outcome(error, url: url, response: record.response))
            }
            if let delay = retryPolicy.delay(
                after: error, failuresWithoutProgress: record.failuresWithoutProgress, now: now,
                deadline: record.deadline)
            {
                adoptResumeData(error.userInfo[NSURLSessionDownloadTaskResumeData] as? Data, into: &record)
                return retry(&record, after: delay, reason: "\(error.code.rawValue)")
            }
            return finish(&record, outcome: Self.outcome(error, url: url, response: record.response))
        }
        if record.cancelRequested {
            // The app cancelled while the answer came: it is not retried, and not a success.
            return finish(
                &record,
                outcome: Self.outcome(URLError(.cancelled), url: url, response: record.response))
        }
        if let http = attempt.task.response as? HTTPURLResponse,
            let delay = retryPolicy.delay(
                status: http.statusCode, retryAfter: http.value(forHTTPHeaderField: "Retry-After"), now: now,
                deadline: record.deadline)
        {
            // (A download's `file` is Courier's, which deletes it; an upload's body file is the daemon's.)
            if case .uploadFile = record.spec.kind, let file { unlink(file.path) }
            // The engine dropped the partial file for the refused response; the next attempt continues the copy.
            if attempt.resumedFrom > 0, let restored = PartialFileKeeper.restore(in: attempt.folder) {
                record.partialFileName = restored
            } else {
                record.forgetPartial()
            }
            return retry(&record, after: delay, reason: "status \(http.statusCode)")
        }
        PartialFileKeeper.discard(in: attempt.folder)
        if case .download = record.spec.kind, file == nil {
            return finish(
                &record,
                outcome: BackgroundOutcome(
                    errorCode: URLError.Code.cannotMoveFile.rawValue,
                    errorDescription: "courierd could not keep the finished download", failingURL: url,
                    response: record.response))
        }
        if case .uploadFile = record.spec.kind {
            return finish(&record, outcome: BackgroundOutcome(response: record.response, bodyFile: file?.path))
        }
        // The file is given its lasting name (a hard link: Courier deletes its own name when the handler returns)
        // before the outcome naming it is journaled, so a journaled outcome always has its file; a crash in between
        // leaves a file no outcome names, replaced by the next attempt's.
        let finished = finishedFile(for: key)
        unlink(finished.path)
        guard let file, link(file.path, finished.path) == 0 else {
            return finish(
                &record,
                outcome: BackgroundOutcome(
                    errorCode: URLError.Code.cannotMoveFile.rawValue,
                    errorDescription: "courierd could not keep the finished download: \(PrivateFolder.describe(errno))",
                    failingURL: url, response: record.response))
        }
        finish(&record, outcome: BackgroundOutcome(file: finished.path, response: record.response))
    }

    /// A failed attempt's resume data is the new durable part (the engine flushed and kept the partial file).
    private func adoptResumeData(_ resumeData: Data?, into record: inout TaskRecord) {
        guard let resumeData, let data = try? ResumeData(decoding: resumeData) else { return }
        record.adoptPartial(data, boot: BootIdentifier.current)
    }

    private func retry(_ record: inout TaskRecord, after delay: TimeInterval, reason: String) {
        record.failuresWithoutProgress += 1
        record.state = record.state == .suspended ? .suspended : .waiting
        record.notBefore = Date().addingTimeInterval(delay)
        records[record.key] = record
        _ = save(record)
        logger.info(
            "task \(record.identifier)/\(record.spec.task): retry in \(String(format: "%.2f", delay)) s (\(reason))")
        schedulePump(at: record.notBefore ?? Date())
    }

    /// Ends a task: journals its outcome and the event for its app in one transaction, then sends it.
    private func finish(_ record: inout TaskRecord, outcome: BackgroundOutcome) {
        record.state = .completed
        record.outcome = outcome
        records[record.key] = record
        let body = try? JSONEncoder().encode(BackgroundEvent.Kind.completed(outcome))
        let sequence = save(record, event: body)
        logger.info("task \(record.identifier)/\(record.spec.task): completed (error \(outcome.errorCode ?? 0))")
        // Not journaled (the journal cannot be written): an attached app still hears it now; sequence 0 is not
        // acknowledged.
        send(
            BackgroundEvent(sequence: sequence ?? 0, task: record.spec.task, kind: .completed(outcome)),
            to: record.identifier)
        awaitedTaskEnded(record.key)
        launchIfDetached(record.identifier)
    }

    static func outcome(_ error: URLError, url: URL?, response: CodableResponse?) -> BackgroundOutcome {
        BackgroundOutcome(
            errorCode: error.code.rawValue,
            errorDescription: error.userInfo[NSLocalizedDescriptionKey] as? String,
            failingURL: url,
            resumeData: error.userInfo[NSURLSessionDownloadTaskResumeData] as? Data,
            response: response)
    }

    /// Writes `record` (and `event`) to the journal; `false` (or `nil`) when it could not.
    @discardableResult
    func save(_ record: TaskRecord) -> Bool {
        save(record, event: nil) != nil
    }

    private func save(_ record: TaskRecord, event: Data?) -> Int64? {
        do {
            let encoded = try JSONEncoder().encode(record)
            let row = JournalTask(
                identifier: record.identifier, task: record.spec.task, finished: record.state == .completed,
                record: encoded)
            return try journal.save(row, appending: event) ?? 0
        } catch {
            logger.error("journal: cannot save task \(record.identifier)/\(record.spec.task): \(error)")
            return nil
        }
    }
}
