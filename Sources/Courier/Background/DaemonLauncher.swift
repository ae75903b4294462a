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
        try PrivateFolder.prepare(
            location.runtimeFolder, purpose: "background runtime folder", hint: "(set XDG_RUNTIME_DIR)")
        let path = location.socket.path
        if case .success(let descriptor) = UnixSocket.connect(to: path) {
            return FrameChannel(descriptor: descriptor, label: "client")
        }
        guard let executable = executable(environment: environment) else {
            throw .cannotConnectToHost(
                "no courierd daemon is running and none was found to start (set COURIERD_PATH, or put courierd "
                    + "beside the executable or on PATH)")
        }
        try spawn(executable, environment: environment, log: location.runtimeFolder.appendingPathComponent("courierd.log"))
        let deadline = Date().addingTimeInterval(startTimeout)
        var lastError = ENOENT
        while Date() < deadline {
            switch UnixSocket.connect(to: path) {
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

    /// Starts `executable` detached, and reaps it when it exits (it is this process's child).
    private static func spawn(_ executable: String, environment: [String: String], log: URL) throws(TransferError) {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // POSIX_SPAWN_SETSID (glibc 2.26), which Swift's Glibc module does not export.
        let startsSession: Int32 = 0x80
        posix_spawnattr_setflags(&attributes, Int16(startsSession | POSIX_SPAWN_SETSIGMASK))
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        // The daemon's log, in its private runtime folder.
        posix_spawn_file_actions_addopen(&actions, 2, log.path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, 0o600)
        var pid = pid_t()
        let arguments: [UnsafeMutablePointer<CChar>?] = [strdup(executable), nil]
        let variables: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            arguments.forEach { free($0) }
            variables.forEach { free($0) }
        }
        let result = posix_spawn(&pid, executable, &actions, &attributes, arguments, variables)
        guard result == 0 else {
            throw .cannotConnectToHost("cannot start courierd (\(executable)): \(UnixSocket.describe(result))")
        }
        let child = pid
        Thread.detachNewThread {
            var status: Int32 = 0
            while waitpid(child, &status, 0) < 0 && errno == EINTR {}
        }
    }
}
