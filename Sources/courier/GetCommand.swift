import ArgumentParser
import Courier
import Foundation
import NIOConcurrencyHelpers

/// `courier get URL…`: loads URLs and writes their bodies to standard output or files.
struct GetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Load URLs and write their bodies to standard output or to files.",
        discussion: """
            Every transfer is a URLSession task of Courier: redirects are followed (URLSession always does), \
            compressed bodies decoded, cookies kept for the run, credentials given through authentication \
            challenges. A file named with -o or -O appears complete or not at all.

            EXAMPLES
              courier get https://example.com/                      body to standard output
              courier get -o big.iso https://example.com/big.iso    progress bar, file renamed into place at the end
              courier get -C - --retry 5 -O https://example.com/big.iso
                                                                    resume after a drop, keep going across runs
              courier get -Z -O URL1 URL2 URL3                      three downloads at once, each named after its URL
              courier get -w '%{http_code} %{time_total}\\n' -o /dev/null URL

            PROGRESS
              On a terminal, each running transfer has a line on standard error: bytes, percent, rate and ETA (a \
            spinner when the length is unknown), redrawn at most ten times a second. Nothing but bodies and -w \
            output goes to standard output. -s, or a standard error that is not a terminal, turns progress off.

            FILES
              FILE.courier-partial   the resume data of an interrupted -C - download of FILE
              .courier-partials/     its partial bytes (private to the user), beside FILE
              .courier-XXXXXX/       a run's download folder, removed when the run ends

            \(ExitStatus.documentation)
            """
    )

    @Argument(help: ArgumentHelp("The http or https URLs to load.", valueName: "url"))
    var urls: [String] = []

    @OptionGroup(title: "Output") var outputOptions: OutputOptions
    @OptionGroup(title: "Request") var requestOptions: RequestOptions
    @OptionGroup(title: "Connection") var connectionOptions: ConnectionOptions
    @OptionGroup(title: "Retries and parallel transfers") var retryOptions: RetryOptions

    @Option(
        name: .customLong("background"),
        help: ArgumentHelp(
            "Queue the downloads with courierd in this background session and return at once; "
                + "'courier queue wait <id>' saves the files. Only -o, -O and --output-dir apply.",
            valueName: "id"))
    var background: String?

    func run() async throws {
        do {
            let code = try await perform()
            if code != 0 { throw ExitCode(code) }
        } catch let error as CLIError {
            if !outputOptions.silent || outputOptions.showError {
                Terminal.writeError("courier: \(error.description)\n")
            }
            throw ExitCode(error.exitCode)
        }
    }

    private func perform() async throws -> Int32 {
        // Read before any transfer thread could (see OutputSink.processUmask).
        _ = OutputSink.processUmask
        let settings = try makeSettings()
        let jobs = try makeJobs(settings: settings)
        if let background {
            return try await BackgroundQueueing.queue(jobs, identifier: background, quiet: outputOptions.silent)
        }
        let board = ProgressBoard(enabled: settings.showProgress)
        let verboseLog = settings.verbose ? VerboseLog(board: board) : nil
        let delegate = SessionDelegate(trust: settings.trust, verboseLog: verboseLog)
        let cookies = try loadCookies()
        let pool = SessionPool(settings: settings, delegate: delegate, cookies: cookies)
        // Caught before any file or folder is made, so that an interruption always finds what to clean up.
        let started = NIOLockedValueBox<[TransferRunner]>([])
        let interruptions = InterruptionHandler {
            board.stop()
            for runner in started.withLockedValue({ $0 }) { runner.interrupt() }
            if settings.showErrors { Terminal.writeError("courier: interrupted\n") }
        }
        defer { interruptions.stop() }
        let runners = jobs.map {
            TransferRunner(
                job: $0, settings: settings, pool: pool, delegate: delegate, board: board, verboseLog: verboseLog)
        }
        started.withLockedValue { $0 = runners }
        let start = ProcessInfo.processInfo.systemUptime
        let results = await run(runners, parallel: retryOptions.parallel, limit: max(1, retryOptions.parallelMax))
        while interruptions.isInterrupting {
            // The signal's cleanup runs and exits with 128 + the signal; an exit here would race it.
            try? await Task.sleep(for: .seconds(1))
        }
        board.stop()
        pool.finish()
        if let jar = requestOptions.cookieJar, let cookies {
            do {
                try writeCookieJar(cookies, to: jar)
            } catch {
                if settings.showErrors {
                    Terminal.writeError("courier: cannot write the cookie jar \(jar): \(error)\n")
                }
            }
        }
        if results.count > 1, settings.showErrors, !outputOptions.silent {
            let failed = results.filter { $0.exitStatus != 0 }.count
            let bytes = results.reduce(Int64(0)) { $0 + $1.report.sizeDownload }
            let elapsed = ProcessInfo.processInfo.systemUptime - start
            Terminal.writeError(
                "courier: \(results.count) transfers, \(results.count - failed) succeeded, \(failed) failed; "
                    + "\(ByteCount.format(bytes)) in \(String(format: "%.1f", elapsed)) s\n")
        }
        return results.first { $0.exitStatus != 0 }?.exitStatus ?? 0
    }

    /// Runs the transfers one after another, or up to `limit` at a time with `-Z`; results in URL order.
    private func run(_ runners: [TransferRunner], parallel: Bool, limit: Int) async -> [TransferResult] {
        guard parallel, runners.count > 1 else {
            var results: [TransferResult] = []
            for runner in runners { results.append(await runner.run()) }
            return results
        }
        return await withTaskGroup(of: (Int, TransferResult).self) { group in
            var results = [TransferResult?](repeating: nil, count: runners.count)
            var next = 0
            func startNext() {
                guard next < runners.count else { return }
                let (index, runner) = (next, runners[next])
                next += 1
                group.addTask { (index, await runner.run()) }
            }
            for _ in 0..<min(limit, runners.count) { startNext() }
            while let (index, result) = await group.next() {
                results[index] = result
                startNext()
            }
            return results.compactMap { $0 }
        }
    }

    // MARK: Options

    private func makeSettings() throws -> TransferSettings {
        var settings = TransferSettings()
        settings.method = requestOptions.method
        settings.headers = try requestOptions.headers.map(Self.parseHeader)
        if let agent = requestOptions.userAgent { settings.headers.append(("User-Agent", agent)) }
        if let referer = requestOptions.referer { settings.headers.append(("Referer", referer)) }
        if let cookie = requestOptions.cookie, cookie.contains("=") {
            settings.headers.append(("Cookie", cookie))
        }
        if let data = requestOptions.data {
            if data.hasPrefix("@") {
                guard let contents = FileManager.default.contents(atPath: String(data.dropFirst())) else {
                    throw CLIError("cannot read the body file \(data.dropFirst())", exitCode: 26)
                }
                settings.body = contents
            } else {
                settings.body = Data(data.utf8)
            }
        }
        settings.dataInQuery = requestOptions.dataInQuery
        settings.includeHeaders = outputOptions.includeHeaders
        settings.head = outputOptions.head
        settings.failOnHTTPError = outputOptions.failOnHTTPError
        settings.verbose = outputOptions.verbose
        settings.writeOut = outputOptions.writeOut
        settings.showErrors = !outputOptions.silent || outputOptions.showError
        settings.showProgress =
            !outputOptions.silent && !outputOptions.noProgressMeter && Terminal.standardErrorIsTerminal
        if let continueAt = outputOptions.continueAt {
            guard continueAt == "-" else {
                throw CLIError(
                    "-C takes '-' (continue where the partial download stopped), not \(continueAt)", exitCode: 2)
            }
            guard !outputOptions.output.isEmpty || outputOptions.remoteName else {
                throw CLIError("-C - needs an output file (-o FILE or -O)", exitCode: 2)
            }
            guard !outputOptions.includeHeaders && !outputOptions.head else {
                throw CLIError("-C - cannot be used with -i or -I", exitCode: 2)
            }
            settings.continueDownloads = true
        }
        guard requestOptions.maxRedirects >= 0 else { throw CLIError("--max-redirs must be 0 or more", exitCode: 2) }
        settings.maxRedirects = requestOptions.maxRedirects
        if let user = requestOptions.user {
            let parts = user.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            settings.credentials = (String(parts[0]), parts.count > 1 ? String(parts[1]) : "")
        }
        if let rate = connectionOptions.limitRate {
            guard let bytes = ByteCount.parseAllowingZero(rate) else {
                throw CLIError("--limit-rate takes a rate such as 100K or 1.5M (0: no limit), not \(rate)", exitCode: 2)
            }
            // 0 is no limit, as curl reads it (scripts pass `--limit-rate "${RATE:-0}"`).
            settings.limitRate = bytes > 0 ? bytes : nil
        }
        let delay = retryOptions.retryDelay ?? 0
        let maximumTime = retryOptions.retryMaxTime ?? 0
        guard retryOptions.retry >= 0, delay >= 0, delay.isFinite, maximumTime >= 0, maximumTime.isFinite,
            retryOptions.parallelMax >= 1
        else {
            throw CLIError(
                "--retry, --retry-delay and --retry-max-time must not be negative; --parallel-max ≥ 1", exitCode: 2)
        }
        settings.retry = TransferSettings.RetryPolicy(
            attempts: retryOptions.retry, delay: retryOptions.retryDelay,
            maximumTime: maximumTime > 0 ? maximumTime : nil,
            connectionRefusedIsTransient: retryOptions.retryConnectionRefused)
        settings.trust.insecure = connectionOptions.insecure
        if let path = connectionOptions.caCertificates {
            settings.trust.anchors = try TrustPolicy.loadCertificates(path: path)
        }
        if let pin = connectionOptions.pin { settings.trust.pins = try TrustPolicy.parsePins(pin) }
        if connectionOptions.http11 && connectionOptions.http2 {
            throw CLIError("--http1.1 and --http2 cannot go together", exitCode: 2)
        }
        settings.allowsHTTP2 = !connectionOptions.http11
        settings.proxyDictionary = try TransferSettings.proxyDictionary(
            proxy: connectionOptions.proxy, noProxy: connectionOptions.noProxy)
        settings.proxyCredentials = TransferSettings.proxyCredentials(in: connectionOptions.proxy)
        if let maxTime = requestOptions.maxTime {
            guard maxTime > 0 else { throw CLIError("--max-time must be above 0", exitCode: 2) }
            settings.resourceTimeout = maxTime
        }
        if let timeout = requestOptions.connectTimeout {
            guard timeout > 0 else { throw CLIError("--connect-timeout must be above 0", exitCode: 2) }
            settings.requestTimeout = timeout
        }
        if retryOptions.parallel { settings.maximumConnectionsPerHost = max(6, retryOptions.parallelMax) }
        return settings
    }

    private func makeJobs(settings: TransferSettings) throws -> [TransferJob] {
        guard !urls.isEmpty else { throw CLIError("no URL given (courier get --help)", exitCode: 2) }
        guard outputOptions.output.count <= urls.count else {
            throw CLIError("more -o options than URLs", exitCode: 2)
        }
        // -o pairs with the URLs in order and -O names every URL: mixed, which URL gets which would be a guess.
        guard outputOptions.output.isEmpty || !outputOptions.remoteName else {
            throw CLIError(
                "-o and -O cannot be mixed: give -o for each URL, or -O (with --output-dir) for all", exitCode: 2)
        }
        guard !outputOptions.remoteHeaderName || outputOptions.remoteName else {
            throw CLIError("-J goes with -O", exitCode: 2)
        }
        // -i and -I write the head into the output, which is then written as it arrives, before the server's name
        // is known: -J would be ignored (curl refuses the pair too).
        guard !outputOptions.remoteHeaderName || (!outputOptions.includeHeaders && !outputOptions.head) else {
            throw CLIError("-J cannot be used with -i or -I", exitCode: 2)
        }
        let directory = URL(
            fileURLWithPath: outputOptions.outputDirectory ?? FileManager.default.currentDirectoryPath,
            isDirectory: true)
        if outputOptions.outputDirectory != nil {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: directory.path, isDirectory: &isDirectory),
                isDirectory.boolValue
            else {
                throw CLIError("--output-dir \(directory.path) is not a folder", exitCode: ExitStatus.writeError)
            }
        }
        return try urls.enumerated().map { index, text in
            guard let url = URL(string: text), let scheme = url.scheme?.lowercased() else {
                throw CLIError("not a URL: \(text)", exitCode: ExitStatus.malformedURL)
            }
            guard scheme == "http" || scheme == "https" else {
                throw CLIError("not an http or https URL: \(text)", exitCode: ExitStatus.other)
            }
            guard let host = url.host, !host.isEmpty else {
                throw CLIError("no host in \(text)", exitCode: ExitStatus.malformedURL)
            }
            let output: TransferJob.Output
            if index < outputOptions.output.count {
                let path = outputOptions.output[index]
                if path == "-" {
                    output = .standardOutput
                } else {
                    output = .file(
                        path.hasPrefix("/") ? URL(fileURLWithPath: path) : directory.appendingPathComponent(path))
                }
            } else if outputOptions.remoteName {
                output = .remoteName(directory: directory, fromHeader: outputOptions.remoteHeaderName)
            } else {
                output = .standardOutput
            }
            return TransferJob(index: index, url: url, output: output)
        }
    }

    private static func parseHeader(_ header: String) throws -> (name: String, value: String) {
        guard let colon = header.firstIndex(of: ":") else {
            throw CLIError("a header must look like 'Name: value': \(header)", exitCode: 2)
        }
        let name = header[..<colon].trimmingCharacters(in: .whitespaces)
        let value = header[header.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        guard !name.isEmpty else { throw CLIError("a header has no name: \(header)", exitCode: 2) }
        return (name, value)
    }

    // MARK: Cookies

    /// The run's cookie storage (private to the run, as an ephemeral session's), filled from a `-b` file.
    private func loadCookies() throws -> HTTPCookieStorage? {
        let storage = URLSessionConfiguration.ephemeral.httpCookieStorage
        storage?.cookieAcceptPolicy = .always
        if let file = requestOptions.cookie, !file.contains("=") {
            // curl reads a missing -b file as no cookies (it only turns the cookie engine on).
            if let contents = FileManager.default.contents(atPath: file) {
                let (cookies, _) = NetscapeCookieFile.parse(String(decoding: contents, as: UTF8.self))
                for cookie in cookies { storage?.setCookie(cookie) }
            }
        }
        return storage
    }

    private func writeCookieJar(_ storage: HTTPCookieStorage, to path: String) throws {
        let text = NetscapeCookieFile.format(storage.cookies ?? [])
        if path == "-" {
            Terminal.writeOutput(text)
            return
        }
        let sink = try OutputSink(path: path, mode: 0o600)
        do {
            try sink.write(Data(text.utf8))
            try sink.commit()
        } catch {
            sink.discard()
            throw error
        }
    }
}

/// A failure the tool reports on standard error with an exit status.
struct CLIError: Error, CustomStringConvertible {
    let description: String
    let exitCode: Int32

    init(_ description: String, exitCode: Int32 = 1) {
        self.description = description
        self.exitCode = exitCode
    }
}
