import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Starts a process that outlives its starter: `courierd` started by an app, an app's launch command started by
/// `courierd`. It runs in a session and process group of its own (the starter's exit, its terminal's hang-up or a
/// signal to its group do not reach it), with no blocked signals, input and output on `/dev/null` and standard
/// error appended to `log` (created 0600). The starter reaps it when it exits, on a thread of its own.
package enum DetachedProcess {
    /// Starts `executable` with `arguments` (not counting the program name) and exactly `environment`.
    @discardableResult
    package static func spawn(
        _ executable: String, arguments: [String], environment: [String: String], log: URL?
    ) throws(UnixSocket.Failure) -> pid_t {
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
        if let log {
            posix_spawn_file_actions_addopen(&actions, 2, log.path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, 0o600)
        } else {
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        }
        // Nothing of the starter but standard input, output and error: a descriptor it opened without close-on-exec
        // (or while another thread was about to set it) must not live on in a process that outlives it.
        if let closeFrom = addCloseFrom { _ = closeFrom(&actions, 3) }
        var pid = pid_t()
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        let variables: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv + variables { free(pointer) }
        }
        let result = posix_spawn(&pid, executable, &actions, &attributes, argv, variables)
        guard result == 0 else { throw UnixSocket.Failure(code: result) }
        let child = pid
        Thread.detachNewThread {
            var status: Int32 = 0
            while waitpid(child, &status, 0) < 0 && errno == EINTR {}
        }
        return child
    }

    private typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which Swift's Glibc module does not
    /// export; `nil` on an older C library (only close-on-exec descriptors are closed then).
    private static let addCloseFrom: CloseFrom? = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np").map {
        unsafeBitCast($0, to: CloseFrom.self)
    }
}
