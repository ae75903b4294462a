import CourierHTTP
import CourierStore
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Connects to this user's `courierd`, starting it when none answers.
///
/// The executable is `$COURIERD_PATH`, else `courierd` beside the running executable, else the first on `PATH`. It
/// starts in a session and process group of its own, its input and output on `/dev/null` and its log appended to
/// `courierd.log` in the private runtime folder, so that the app's exit, its terminal's hang-up or a signal to its process group do not reach it. Two processes starting it at once
/// are harmless: the daemon takes a lock file, and the loser exits; both connect to the winner.
package enum DaemonLauncher {
    /// How long a connection waits for a daemon it started.
    package static let startTimeout: TimeInterval = 10

    /// A channel to the daemon. Blocks (up to ``startTimeout`` when the daemon has to start): call it off the event
    /// loops.
    package static func connect(
        location: BackgroundLocation, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(TransferError) -> FrameChannel {
        // A running daemon first, by its socket or the one it published: both refuse a listener of another user
        // (`SO_PEERCRED`), so no folder check is needed to reach it. Checked first, another user's folder at the
        // fallback path (`/tmp/courier-<uid>` without `XDG_RUNTIME_DIR`) cut off the daemon a cron job or an ssh
        // login reaches through the published path.
        if case .success(let descriptor) = connectToRunning(location) {
            return FrameChannel(descriptor: descriptor, label: "client")
        }
        try PrivateFolder.prepare(
            location.runtimeFolder, purpose: "background runtime folder", hint: "(set XDG_RUNTIME_DIR)")
        let path = location.socket.path
        guard let executable = executable(environment: environment) else {
            throw .cannotConnectToHost(
                "no courierd daemon is running and none was found to start (set COURIERD_PATH, or put courierd "
                    + "beside the executable or on PATH)")
        }
        do {
            try DetachedProcess.spawn(
                executable, arguments: [], environment: environment,
                log: location.runtimeFolder.appendingPathComponent("courierd.log"))
        } catch {
            throw .cannotConnectToHost("cannot start courierd (\(executable)): \(UnixSocket.describe(error.code))")
        }
        let deadline = Date().addingTimeInterval(startTimeout)
        var lastError = ENOENT
        while Date() < deadline {
            // (A daemon started here leaves at once when another runs the journal: that one answers.)
            switch connectToRunning(location) {
            case .success(let descriptor):
                return FrameChannel(descriptor: descriptor, label: "client")
            case .failure(let failure):
                lastError = failure.code
                usleep(20_000)
            }
        }
        throw .cannotConnectToHost(
            "courierd (\(executable)) did not answer at \(path) within \(Int(startTimeout)) s: "
                + UnixSocket.describe(lastError))
    }

    /// A connected socket to the daemon of `location`: at its own socket, else at the one the daemon running its
    /// journal published (a process without `XDG_RUNTIME_DIR`, such as a cron job, has another runtime folder than
    /// the login session whose daemon runs the journal).
    package static func connectToRunning(_ location: BackgroundLocation) -> Result<Int32, UnixSocket.Failure> {
        let own = UnixSocket.connect(to: location.socket.path)
        guard case .failure = own, let published = location.publishedSocketPath(), published != location.socket.path,
            case .success(let descriptor) = UnixSocket.connect(to: published)
        else { return own }
        return .success(descriptor)
    }

    /// Where `courierd` is, or `nil`.
    package static func executable(environment: [String: String]) -> String? {
        if let path = environment["COURIERD_PATH"], !path.isEmpty {
            return access(path, X_OK) == 0 ? path : nil
        }
        var candidates: [String] = []
        if let beside = Bundle.main.executableURL?.deletingLastPathComponent().appendingPathComponent("courierd") {
            candidates.append(beside.path)
        }
        for folder in (environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":") {
            candidates.append(String(folder) + "/courierd")
        }
        return candidates.first { access($0, X_OK) == 0 }
    }
}
