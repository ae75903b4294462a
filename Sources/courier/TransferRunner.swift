import Courier
import CourierHTTP
import Foundation
import NIOConcurrencyHelpers

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// One URL of the command and where its body goes.
struct TransferJob: Sendable {
    enum Output: Sendable {
        case standardOutput
        case file(URL)
        /// `-O`: a file in `directory` named after the URL, or with `-J` after the response's
        /// `suggestedFilename` (then an existing file is not replaced).
        case remoteName(directory: URL, fromHeader: Bool)
    }

    /// The URL's place on the command line.
    let index: Int
    let url: URL
    let output: Output

    /// The name the progress line shows.
    var displayName: String {
        switch output {
        case .file(let file): file.lastPathComponent
        default:
            url.lastPathComponent.isEmpty || url.lastPathComponent == "/" ? (url.host ?? "-") : url.lastPathComponent
        }
    }
}

/// How a transfer ended.
struct TransferResult: Sendable {
    var exitStatus: Int32
    var report: TransferReport
}

/// Runs one transfer to its end: the attempts with `--retry`, resuming a download from Courier's resume data, `-C -`
/// records, the output file appearing complete or not at all, and its progress line.
final class TransferRunner: Sendable {
    private struct State {
        var handler: TaskHandler?
        var interrupted = false
    }

    private let job: TransferJob
    private let settings: TransferSettings
    private let pool: SessionPool
    private let delegate: SessionDelegate
    private let board: ProgressBoard
    private let verboseLog: VerboseLog?
    private let state = NIOLockedValueBox(State())
    /// When the first attempt started (uptime), for `%{time_total}`.
    private let start = NIOLockedValueBox(0.0)
    /// For download tasks: the folder beside the output where they write (nil: a data task), made when the transfer
    /// starts, so that transfers still waiting their turn leave nothing on disk.
    private let downloadDirectory: URL?
    /// The folder made for the download tasks, and whether it is this run's own (removed at the end) rather than
    /// `-C -`'s `.courier-partials`.
    private let madeFolder = NIOLockedValueBox<(url: URL, ownedByRun: Bool)?>(nil)
    /// The output file when its name is known before the response (all but `-O -J`, whose name comes with it).
    private let knownDestination: URL?
    /// The files a placement makes beside the destination while it runs, removed on an interruption.
    private let placementCleanup = PlacementCleanup()

    init(
        job: TransferJob, settings: TransferSettings, pool: SessionPool, delegate: SessionDelegate,
        board: ProgressBoard, verboseLog: VerboseLog?
    ) {
        self.job = job
        self.settings = settings
        self.pool = pool
        self.delegate = delegate
        self.board = board
        self.verboseLog = verboseLog
        var destination: URL?
        var directory: URL?
        switch job.output {
        case .standardOutput:
            break
        case .file(let file):
            destination = file
            directory = file.deletingLastPathComponent()
        case .remoteName(let folder, let fromHeader):
            directory = folder
            if !fromHeader || settings.continueDownloads {
                destination = folder.appendingPathComponent(DownloadPlacement.safeFileName(job.url.lastPathComponent))
            }
        }
        self.knownDestination = destination
        // Downloads write beside their file; -i and -I write heads into the output, and a destination that is not
        // a regular file (/dev/null, a FIFO) is written directly: those use a data task.
        let usesDownload =
            directory != nil && !settings.includeHeaders && !settings.head
            && destination.map(DownloadPlacement.isReplaceable) ?? true
        downloadDirectory = usesDownload ? directory : nil
    }

    /// The folder download tasks write into, once made.
    private var folder: (url: URL, ownedByRun: Bool)? { madeFolder.withLockedValue { $0 } }

    /// Makes the download folder (a new private one, or `-C -`'s); a message when it cannot be made.
    private func makeFolder() -> String? {
        guard let directory = downloadDirectory else { return nil }
        if settings.continueDownloads {
            madeFolder.withLockedValue {
                $0 = (directory.appendingPathComponent(DownloadPlacement.partialsFolderName), false)
            }
            return nil
        }
        do {
            // Made and recorded under the lock the interruption's cleanup reads it with: an interruption either
            // comes first (no folder is made) or waits for the folder and removes it. The process exits as soon as
            // the interruption's cleanup returns, so a folder made outside the lock could be left behind.
            try madeFolder.withLockedValue { folder in
                guard !state.withLockedValue({ $0.interrupted }) else { return }
                folder = (try DownloadPlacement.makeRunFolder(in: directory), true)
            }
            return nil
        } catch {
            return "cannot write in \(directory.path): \(error.localizedDescription)"
        }
    }

    func run() async -> TransferResult {
        let line = board.add(name: job.displayName)
        var report = TransferReport()
        report.effectiveURL = job.url.textWithoutCredentials()
        let start = ProcessInfo.processInfo.systemUptime
        self.start.withLockedValue { $0 = start }
        defer { cleanUp() }
        if let folderError = makeFolder() {
            return finish(line, report: &report, status: ExitStatus.writeError, message: folderError)
        }
        var resumeData = loadRecord()
        var usingRecord = resumeData != nil
        var retries = 0
        while !state.withLockedValue({ $0.interrupted }) {
            let retriesLeft =
                retries < settings.retry.attempts
                && settings.retry.maximumTime.map { ProcessInfo.processInfo.systemUptime - start < $0 } ?? true
            let outcome = await attempt(resumeData: resumeData, line: line, retriesLeft: retriesLeft)
            if state.withLockedValue({ $0.interrupted }) { break }
            if let metrics = outcome.metrics { report.take(metrics) }
            report.sizeDownload += outcome.bytesReceived
            if let response = outcome.response {
                report.httpCode = response.statusCode
                // The response's URL is the request's, with any `user:password@` the command line gave it.
                report.effectiveURL = response.url.map { $0.textWithoutCredentials() } ?? report.effectiveURL
                report.contentType = response.value(forHTTPHeaderField: "Content-Type") ?? ""
            }
            if let placed = outcome.placedFile { report.fileName = placed.path }

            // Resume data survives an attempt that failed before any response (its partial file is untouched).
            let resumable = outcome.resumeData ?? (outcome.response == nil ? resumeData : nil)
            if let failure = outcome.writeFailure {
                return finish(line, report: &report, status: ExitStatus.writeError, message: "cannot write: \(failure)")
            }
            if outcome.redirectLimitReached {
                return finish(
                    line, report: &report, status: ExitStatus.tooManyRedirects,
                    message: "\(displayURL): more than \(settings.maxRedirects) redirects (--max-redirs)")
            }
            if let error = outcome.error {
                if usingRecord, outcome.response == nil, [.cannotOpenFile, .cannotDecodeRawData].contains(error.code) {
                    // The record or its partial file cannot be used (deleted, another version): start over. Only
                    // before a response: after one, cannotDecodeRawData is a body that failed to decode (a corrupt
                    // compressed body), which says nothing against the partial file.
                    usingRecord = false
                    if let resumeData { discardPartial(namedIn: resumeData) }
                    resumeData = nil
                    if let knownDestination { PartialRecord.remove(for: knownDestination) }
                    board.message(
                        "courier: the partial download of \(job.displayName) cannot be continued; starting over")
                    continue
                }
                usingRecord = false
                // The host whose certificate was refused may be a redirect's.
                let failedHost = (error.userInfo[NSURLErrorFailingURLErrorKey] as? URL)?.host ?? job.url.host
                if error.code == .cancelled, let failedHost, let refusal = delegate.trustRefusal(host: failedHost) {
                    return finish(line, report: &report, status: refusal.exitStatus, message: refusal.reason)
                }
                if retriesLeft, settings.retry.isTransient(error), !outcome.wroteIrrevocably {
                    retries += 1
                    resumeData = folder == nil ? nil : resumable
                    // Kept on disk before the wait, so that Ctrl-C during it loses nothing.
                    if let resumeData { saveRecordIfContinuing(resumeData) }
                    await pause(retry: retries, retryAfter: nil, line: line, reason: Self.describe(error))
                    continue
                }
                keepOrDiscardPartial(resumable)
                // URLSession stops at its own limit (Darwin's 20) before asking about one more redirect: say which
                // limit it was, since a larger --max-redirs cannot raise it.
                let reason =
                    error.code == .httpTooManyRedirects
                    ? "more than \(RedirectPolicy.maximumRedirects) redirects (URLSession's limit; --max-redirs)"
                    : Self.describe(error)
                return finish(
                    line, report: &report, status: ExitStatus.forError(error), message: "\(displayURL): \(reason)")
            }
            usingRecord = false
            let status = outcome.response?.statusCode ?? 0
            if outcome.bodyDropped, retriesLeft, TransferSettings.RetryPolicy.transientStatuses.contains(status) {
                retries += 1
                resumeData = nil
                let retryAfter = outcome.response?.value(forHTTPHeaderField: "Retry-After").flatMap(Double.init)
                await pause(retry: retries, retryAfter: retryAfter, line: line, reason: "the server answered \(status)")
                continue
            }
            if settings.failOnHTTPError && status >= 400 {
                return finish(
                    line, report: &report, status: ExitStatus.httpError,
                    message: "\(displayURL): the server answered \(status)")
            }
            if let knownDestination, settings.continueDownloads { PartialRecord.remove(for: knownDestination) }
            return finish(line, report: &report, status: ExitStatus.success, message: nil)
        }
        return TransferResult(exitStatus: ExitStatus.cancelled, report: report)
    }

    /// The URL for messages, without any `user:password@`.
    private var displayURL: String { job.url.textWithoutCredentials() }

    /// The process is being interrupted (the signal handler's queue; the process exits right after): a `-C -`
    /// download keeps its resume data, everything else is removed.
    func interrupt() {
        let handler = state.withLockedValue { state in
            state.interrupted = true
            return state.handler
        }
        // A placement under way leaves no claim or copy beside the user's files, and none starts from now on.
        placementCleanup.abandon()
        if settings.continueDownloads, let knownDestination, let task = handler?.task as? URLSessionDownloadTask {
            let done = DispatchSemaphore(value: 0)
            task.cancel(byProducingResumeData: { data in
                if let data { try? PartialRecord.save(data, for: knownDestination) }
                done.signal()
            })
            _ = done.wait(timeout: .now() + 5)
        } else {
            handler?.abandon()
            // The cancelled download still finishes with its file on its own queue (and may make the folder again
            // for it): the folder is removed once the task completed, or after two seconds at most.
            if let task = handler?.task {
                let deadline = Date(timeIntervalSinceNow: 2)
                while task.state != .completed, Date() < deadline { usleep(10_000) }
            }
        }
        cleanUp()
    }

    // MARK: Attempts

    private func attempt(resumeData: Data?, line: Int, retriesLeft: Bool) async -> AttemptOutcome {
        let session = pool.session(downloadFolder: folder?.url, transfer: job.index)
        let request = settings.request(for: job.url)
        let task: URLSessionTask
        let mode: TaskHandler.Mode
        if folder != nil {
            task = resumeData.map { session.downloadTask(withResumeData: $0) } ?? session.downloadTask(with: request)
            mode = .download(place: { [job, knownDestination, placementCleanup] location, response in
                if let knownDestination {
                    return try DownloadPlacement.place(location, at: knownDestination, cleanup: placementCleanup)
                }
                guard case .remoteName(let directory, _) = job.output else { return nil }
                // -J: the server names the file; it never replaces one that exists (as curl -J).
                let named = directory.appendingPathComponent(DownloadPlacement.safeFileName(response.suggestedFilename))
                return try DownloadPlacement.place(
                    location, at: named, replacing: false, cleanup: placementCleanup)
            })
        } else {
            task = session.dataTask(with: request)
            mode = .data(.sink(dataSinkOpener()))
        }
        let settings = self.settings
        let handler = TaskHandler(
            settings: settings, mode: mode, board: board, line: line, origin: job.url,
            verboseLog: verboseLog,
            keep: { response in
                if retriesLeft, TransferSettings.RetryPolicy.transientStatuses.contains(response.statusCode) {
                    return .drop
                }
                return settings.failOnHTTPError && response.statusCode >= 400 ? .drop : .keep
            })
        // Registered and checked in one step with `interrupt()`, which sets the flag and takes the handler in one:
        // either the interruption finds this handler and cancels its task, or this attempt sees the interruption
        // and never starts. A task started after the interruption looked could re-make the folder it had removed.
        let interrupted = state.withLockedValue { state in
            if !state.interrupted { state.handler = handler }
            return state.interrupted
        }
        if interrupted {
            task.cancel()
            return AttemptOutcome(error: URLError(.cancelled))
        }
        delegate.register(handler, for: task)
        return await handler.run(task)
    }

    /// Opens a data task's output when its response arrives.
    private func dataSinkOpener() -> () throws -> OutputSink {
        let output = job.output
        return {
            switch output {
            case .standardOutput: return try OutputSink(path: nil)
            case .file(let file): return try OutputSink(path: file.path)
            case .remoteName(let directory, _):
                // A data task with -O (-i or -I): the URL names the file (the response is not known yet).
                let name = DownloadPlacement.safeFileName(self.job.url.lastPathComponent)
                return try OutputSink(path: directory.appendingPathComponent(name).path)
            }
        }
    }

    private func pause(retry: Int, retryAfter: Double?, line: Int, reason: String) async {
        // A server's Retry-After is capped at a day: the message says the wait that really comes.
        let wait = min(settings.retry.wait(beforeRetry: retry, retryAfter: retryAfter), 86_400)
        if settings.showErrors {
            board.message(
                "courier: \(job.displayName): \(reason); retry \(retry) of \(settings.retry.attempts) in "
                    + String(format: "%.1f s", wait))
        }
        if wait > 0 { try? await Task.sleep(for: .milliseconds(Int64(wait * 1000))) }
    }

    // MARK: Helpers

    private func loadRecord() -> Data? {
        guard settings.continueDownloads, folder != nil, let knownDestination,
            let data = PartialRecord.load(for: knownDestination)
        else { return nil }
        guard PartialRecord.originalURL(in: data)?.absoluteString == job.url.absoluteString else {
            board.message(
                "courier: \(PartialRecord.location(for: knownDestination).path) is for another URL; starting over")
            // This download's record replaces it: nothing would ever continue its bytes.
            discardPartial(namedIn: data)
            return nil
        }
        return data
    }

    /// With `-C -`, keeps `resumeData` in the record beside the file.
    private func saveRecordIfContinuing(_ resumeData: Data) {
        guard settings.continueDownloads, let knownDestination else { return }
        try? PartialRecord.save(resumeData, for: knownDestination)
    }

    /// After a final failure: `-C -` keeps the resume data beside the file; otherwise the partial bytes go.
    private func keepOrDiscardPartial(_ resumeData: Data?) {
        guard let resumeData, folder != nil else { return }
        if settings.continueDownloads, let knownDestination,
            (try? PartialRecord.save(resumeData, for: knownDestination)) != nil
        {
            if settings.showErrors {
                board.message("courier: kept the partial download; run the command again with -C - to continue it")
            }
            return
        }
        discardPartial(namedIn: resumeData)
    }

    /// Removes the partial file that resume data continues, from the download folder: once its record is given up,
    /// nothing else would ever continue it (and `-C -`'s folder could not go when the run ends). Only a file Courier
    /// itself would have continued (see ``PartialRecord/deletablePartialFile(in:folder:)``): a record it refused
    /// names no file the tool may delete.
    private func discardPartial(namedIn resumeData: Data) {
        guard let folder, let partial = PartialRecord.deletablePartialFile(in: resumeData, folder: folder.url) else {
            return
        }
        unlink(partial.path)
    }

    private func finish(_ line: Int, report: inout TransferReport, status: Int32, message: String?) -> TransferResult {
        report.timeTotal = ProcessInfo.processInfo.systemUptime - start.withLockedValue { $0 }
        report.exitCode = status
        report.errorMessage = message ?? ""
        let rate = report.timeTotal > 0 ? Double(report.sizeDownload) / report.timeTotal : nil
        board.finish(line, succeeded: status == ExitStatus.success, averageRate: rate)
        if let message, settings.showErrors { board.message("courier: \(message)") }
        if let template = settings.writeOut {
            let (text, unknown) = WriteOut.expand(template, report: report)
            Terminal.writeOutput(text)
            if !unknown.isEmpty, settings.showErrors {
                board.message("courier: unknown --write-out variable(s): \(unknown.joined(separator: ", "))")
            }
        }
        return TransferResult(exitStatus: status, report: report)
    }

    private func cleanUp() {
        // Its own session's idle connections go now, not when the whole run ends.
        pool.release(downloadFolder: folder?.url, privateFolder: folder?.ownedByRun ?? false, transfer: job.index)
        guard let folder else { return }
        if folder.ownedByRun {
            DownloadPlacement.removeFolder(folder.url)
        } else {
            DownloadPlacement.removeFolderIfEmpty(folder.url)
        }
    }

    private static func describe(_ error: URLError) -> String {
        "\(error.localizedDescription) (URLError \(error.code.rawValue))"
    }
}
