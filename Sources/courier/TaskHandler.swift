import Courier
import Foundation
import NIOConcurrencyHelpers

/// What one task (one attempt of a transfer) ended with.
struct AttemptOutcome: Sendable {
    var response: HTTPURLResponse?
    var error: URLError?
    /// Courier's resume data, when the download failed in a way that can be continued.
    var resumeData: Data?
    var metrics: URLSessionTaskMetrics?
    /// Body bytes this attempt delivered (after decoding).
    var bytesReceived: Int64 = 0
    /// The offset a resumed download continued from.
    var resumedAt: Int64 = 0
    /// Where the download was put, when it was.
    var placedFile: URL?
    /// The body was dropped on purpose (a retry follows, or `-f` and an error status).
    var bodyDropped = false
    /// More redirects than `--max-redirs` came.
    var redirectLimitReached = false
    /// Writing the body failed: the message.
    var writeFailure: String?
    /// Body bytes went straight to standard output, a pipe or a device (a retry cannot take them back).
    var wroteIrrevocably = false
}

/// Handles the delegate events of one task: writes the body (data tasks) or places the downloaded file, draws
/// progress, applies `--limit-rate`, answers credential challenges and counts redirects. Every method runs on the
/// session's delegate queue.
final class TaskHandler: @unchecked Sendable {
    /// Where a data task's body goes.
    enum DataOutput {
        /// Standard output, or a file, opened when the response arrives.
        case sink(() throws -> OutputSink)
    }

    /// What a data task does with a body, decided when the response arrives; what a download does with its file,
    /// decided when it is complete.
    enum Keep: Equatable {
        case keep
        /// Drop the body: a retry follows or `-f` refuses it.
        case drop
    }

    enum Mode {
        case data(DataOutput)
        /// A download task; `place` moves the finished file into place (or returns `nil` to drop it) before the
        /// delegate method returns and Courier deletes the file.
        case download(place: (URL, HTTPURLResponse) throws -> URL?)
    }

    private let settings: TransferSettings
    private let mode: Mode
    private let board: ProgressBoard
    private let line: Int
    /// The URL the command named: `-u` is answered only for its scheme, host and port.
    private let origin: URL
    private let keep: (HTTPURLResponse) -> Keep
    private let verboseLog: VerboseLog?
    private var limiter: RateLimiter?
    private let lock = NIOLock()
    private var continuation: CheckedContinuation<AttemptOutcome, Never>?
    private var outcome = AttemptOutcome()
    private var sink: OutputSink?
    private var dropBody = false
    private var redirects = 0
    private var received: Int64 = 0
    private(set) var task: URLSessionTask?
    /// The tool is being interrupted: a sink opened from now on is removed at once.
    private var abandoned = false

    init(
        settings: TransferSettings,
        mode: Mode,
        board: ProgressBoard,
        line: Int,
        origin: URL,
        verboseLog: VerboseLog?,
        keep: @escaping (HTTPURLResponse) -> Keep
    ) {
        self.settings = settings
        self.mode = mode
        self.board = board
        self.line = line
        self.origin = origin
        self.verboseLog = verboseLog
        self.keep = keep
        self.limiter = settings.limitRate.map { RateLimiter(bytesPerSecond: $0) }
    }

    /// Runs `task` to its end.
    func run(_ task: URLSessionTask) async -> AttemptOutcome {
        await withCheckedContinuation { continuation in
            let abandoned = lock.withLock {
                self.continuation = continuation
                self.task = task
                return self.abandoned
            }
            // Abandoned before it started (an interruption found no task to cancel): it never starts, so it makes
            // no file, and its cancellation completes the attempt.
            if abandoned {
                task.cancel()
            } else {
                task.resume()
            }
        }
    }

    /// The tool is being interrupted: cancels the task and removes the data task's temporary file (also one
    /// opened after this call). A task given to ``run(_:)`` after this call is cancelled, never started.
    func abandon() {
        let (task, sink): (URLSessionTask?, OutputSink?) = lock.withLock {
            abandoned = true
            return (self.task, self.sink)
        }
        task?.cancel()
        sink?.abandon()
    }

    // MARK: Events

    func didReceive(response: URLResponse, task: URLSessionTask) -> URLSession.ResponseDisposition {
        guard let http = response as? HTTPURLResponse else { return .allow }
        let refusedRedirect = lock.withLock {
            outcome.response = http
            return outcome.redirectLimitReached
        }
        // A redirect beyond --max-redirs arrives as the answer: it is not the body that was asked for.
        if refusedRedirect || keep(http) == .drop {
            lock.withLock {
                dropBody = true
                outcome.bodyDropped = true
            }
            return .allow
        }
        guard case .data(.sink(let open)) = mode else { return .allow }
        do {
            let sink = try open()
            let abandoned = lock.withLock {
                self.sink = sink
                return self.abandoned
            }
            if abandoned {
                sink.abandon()
                return .cancel
            }
            if settings.includeHeaders || settings.head {
                try sink.write(Data(Self.headText(http).utf8))
                if sink.isDirect { lock.withLock { outcome.wroteIrrevocably = true } }
            }
        } catch {
            lock.withLock { outcome.writeFailure = "\(error.localizedDescription)" }
            return .cancel
        }
        board.update(line, received: 0, total: http.expectedContentLength)
        return .allow
    }

    func didReceive(data: Data, task: URLSessionTask) {
        let (output, drop, total): (OutputSink?, Bool, Int64) = lock.withLock {
            received += Int64(data.count)
            outcome.bytesReceived = received
            return (self.sink, dropBody, received)
        }
        if !drop, let output {
            do {
                try output.write(data)
                if output.isDirect { lock.withLock { outcome.wroteIrrevocably = true } }
            } catch {
                lock.withLock { outcome.writeFailure = "\(error.localizedDescription)" }
                task.cancel()
                return
            }
        }
        board.update(line, received: total, total: task.response?.expectedContentLength)
        throttle(Int64(data.count), task: task)
    }

    func didWrite(bytes: Int64, totalWritten: Int64, totalExpected: Int64, task: URLSessionTask) {
        lock.withLock {
            received += bytes
            outcome.bytesReceived = received
        }
        board.update(line, received: totalWritten, total: totalExpected)
        throttle(bytes, task: task)
    }

    func didResume(atOffset offset: Int64, expectedTotal: Int64) {
        lock.withLock { outcome.resumedAt = offset }
        board.restart(line)
        board.update(line, received: offset, total: expectedTotal)
    }

    func didFinishDownloading(to location: URL, task: URLSessionDownloadTask) {
        guard case .download(let place) = mode, let http = task.response as? HTTPURLResponse else { return }
        let refusedRedirect = lock.withLock {
            outcome.response = http
            return outcome.redirectLimitReached
        }
        if refusedRedirect || keep(http) == .drop {
            lock.withLock { outcome.bodyDropped = true }
            return
        }
        do {
            let placed = try place(location, http)
            lock.withLock { outcome.placedFile = placed }
        } catch {
            lock.withLock { outcome.writeFailure = "\(error.localizedDescription)" }
        }
    }

    /// `nil` to refuse the redirect (more than `--max-redirs`). `-I` stays a `HEAD` where URLSession makes a 303's
    /// request a `GET` (as curl's `-I -L` does): the tool promised the status line and headers, not a body.
    func willRedirect(to request: URLRequest) -> URLRequest? {
        let allowed = lock.withLock {
            redirects += 1
            if redirects > settings.maxRedirects {
                outcome.redirectLimitReached = true
                return false
            }
            return true
        }
        guard allowed else { return nil }
        guard settings.head, settings.method == nil, request.httpMethod == "GET" else { return request }
        var head = request
        head.httpMethod = "HEAD"
        return head
    }

    func didReceive(
        challenge: URLAuthenticationChallenge
    ) -> (URLSession.AuthChallengeDisposition, URLCredential?) {
        let space = challenge.protectionSpace
        let isProxy = space.isProxy()
        let credentials = isProxy ? settings.proxyCredentials : settings.credentials
        // -u is given only to the scheme, host and port the command named, never where a redirect leads (another
        // host, or the same host over plain http).
        guard let credentials, challenge.previousFailureCount == 0, isProxy || Self.isOrigin(space, of: origin),
            [NSURLAuthenticationMethodHTTPBasic, NSURLAuthenticationMethodHTTPDigest, NSURLAuthenticationMethodDefault]
                .contains(space.authenticationMethod)
        else {
            return (.performDefaultHandling, nil)
        }
        verboseLog?.noteAnswered(scheme: space.authenticationMethod, proxy: isProxy)
        return (
            .useCredential, URLCredential(user: credentials.user, password: credentials.password, persistence: .none)
        )
    }

    func didFinishCollecting(_ metrics: URLSessionTaskMetrics) {
        lock.withLock { outcome.metrics = metrics }
        verboseLog?.log(metrics)
    }

    func didComplete(error: (any Error)?) {
        let urlError = error.map { $0 as? URLError ?? URLError(.unknown) }
        let taken: (CheckedContinuation<AttemptOutcome, Never>?, AttemptOutcome, OutputSink?) = lock.withLock {
            let taken = continuation
            continuation = nil
            if let urlError {
                outcome.error = urlError
                outcome.resumeData = urlError.userInfo[NSURLSessionDownloadTaskResumeData] as? Data
            }
            return (taken, outcome, sink)
        }
        let (waiting, result, openSink) = taken
        // A data task's file: complete and kept, or gone.
        var final = result
        if let sink = openSink {
            if result.error == nil && result.writeFailure == nil && !result.bodyDropped {
                do { try sink.commit() } catch { final.writeFailure = "\(error.localizedDescription)" }
            } else {
                sink.discard()
            }
        }
        waiting?.resume(returning: final)
    }

    // MARK: Helpers

    /// Pauses the transfer while it is ahead of `--limit-rate`: `suspend()` makes Courier stop reading from the
    /// socket (the server then slows down through TCP), and waiting here, on this transfer's own delegate queue
    /// (a rate-limited transfer has a session of its own), holds back what Courier had already read. Nothing is
    /// dropped.
    private func throttle(_ bytes: Int64, task: URLSessionTask) {
        let now = ProcessInfo.processInfo.systemUptime
        let pause: Double? = lock.withLock {
            guard var limiter else { return nil }
            defer { self.limiter = limiter }
            return limiter.record(bytes, at: now)
        }
        guard let pause else { return }
        task.suspend()
        Thread.sleep(forTimeInterval: pause)
        task.resume()
    }

    /// Whether `space` is the scheme, host and port of `url`.
    static func isOrigin(_ space: URLProtectionSpace, of url: URL) -> Bool {
        let scheme = url.scheme?.lowercased() ?? ""
        let port = url.port ?? (scheme == "https" ? 443 : 80)
        return space.host.lowercased() == url.host?.lowercased() && space.port == port
            && (space.protocol?.lowercased() ?? scheme) == scheme
    }

    /// The status line and header fields as `-i` and `-I` write them.
    static func headText(_ response: HTTPURLResponse) -> String {
        var text = "HTTP/1.1 \(response.statusCode)\r\n"
        for (name, value) in response.allHeaderFields.sorted(by: { "\($0.key)" < "\($1.key)" }) {
            text += "\(name): \(value)\r\n"
        }
        return text + "\r\n"
    }
}
