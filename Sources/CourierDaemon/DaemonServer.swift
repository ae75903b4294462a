import Courier
import CourierHTTP
import CourierStore
import Foundation
import Logging

#if canImport(Glibc)
    import Glibc
#endif

/// `courierd`'s process: takes the per-user lock, listens on the socket, recovers the journal, and serves each
/// connection on a thread of its own. Connections from another user are closed at once (`SO_PEERCRED`).
public enum DaemonServer {
    /// Runs the daemon until it exits (idle, `stop`, or a signal). Returns only when another daemon already serves
    /// this user.
    public static func run(environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        let location = BackgroundLocation(environment: environment)
        var logger = Logger(label: "courierd")
        logger.logLevel = environment["COURIERD_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .info
        try PrivateFolder.prepare(
            location.runtimeFolder, purpose: "background runtime folder", hint: "(set XDG_RUNTIME_DIR)")
        guard try takeLock(at: location.lockFile, servedAt: { location.socket.path }) else {
            logger.info("another courierd serves \(location.socket.path)")
            return
        }
        // One daemon per journal, not only per runtime folder: a second one would continue every task of the journal
        // again, into the same task folders (deleting the first one's partial files). Its clients reach the first
        // through the socket path it publishes beside the journal.
        try PrivateFolder.prepare(location.dataFolder, purpose: "background data folder", hint: "(set XDG_DATA_HOME)")
        guard try takeLock(at: location.journalLockFile, servedAt: { location.publishedSocketPath() }) else {
            logger.info("another courierd runs the journal \(location.journal.path)")
            return
        }
        let daemon = try Daemon(location: location, settings: DaemonSettings(environment: environment), logger: logger)
        let activated = activatedListener(environment: environment)
        let listener = try activated ?? UnixSocket.listen(at: location.socket.path)
        try? PrivateFolder.replaceFile(at: location.pidFile, with: Data("\(getpid())\n".utf8))
        try? PrivateFolder.replaceFile(at: location.publishedSocketFile, with: Data(location.socket.path.utf8))
        logger.info(
            "courierd \(getpid()) listening at \(location.socket.path)\(activated == nil ? "" : " (socket from systemd)")"
        )
        daemon.recover()
        while let descriptor = UnixSocket.accept(on: listener) {
            let channel = FrameChannel(descriptor: descriptor, label: "daemon")
            let peer = channel.peerUserID
            guard UnixSocket.admits(peer: peer) else {
                logger.warning("refused a connection from uid \(peer.map { "\($0)" } ?? "unknown")")
                channel.shutDown()
                continue
            }
            let client = daemon.connected(channel)
            Thread.detachNewThread {
                while let request = channel.receive(BackgroundRequest.self) {
                    daemon.received(request, from: client)
                }
                daemon.disconnected(client)
            }
        }
    }

    /// The listening socket systemd passed by socket activation (`LISTEN_PID` names this process and `LISTEN_FDS`
    /// is at least 1: the socket is descriptor 3), or `nil` to make one. It must be a listening stream socket; it is
    /// made close-on-exec, so that launch commands do not inherit it.
    static func activatedListener(environment: [String: String]) -> Int32? {
        guard environment["LISTEN_PID"].flatMap({ pid_t($0) }) == getpid(),
            let count = environment["LISTEN_FDS"].flatMap({ Int($0) }), count >= 1
        else { return nil }
        let descriptor: Int32 = 3
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(descriptor, SOL_SOCKET, SO_ACCEPTCONN, &value, &length) == 0, value == 1 else { return nil }
        // A Unix-domain socket (a unit listening elsewhere would take the daemon off its users' path).
        var address = sockaddr_storage()
        var addressLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &addressLength) }
        }
        guard named == 0, address.ss_family == sa_family_t(AF_UNIX) else { return nil }
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        // Accepts block (a unit with `NonBlocking=yes` would make the first empty accept end the daemon).
        let flags = fcntl(descriptor, F_GETFL)
        if flags >= 0 { _ = fcntl(descriptor, F_SETFL, flags & ~O_NONBLOCK) }
        return descriptor
    }

    /// Takes one of the daemon's locks (held until the process exits). When another daemon holds it and answers on
    /// its socket (`servedAt`), returns `false`; when it holds it but does not answer, it is exiting: wait for it (a
    /// few seconds).
    private static func takeLock(at file: URL, servedAt socketPath: () -> String?) throws -> Bool {
        let descriptor = open(file.path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw TransferError.cannotCreateFile("cannot open \(file.path): \(PrivateFolder.describe(errno))")
        }
        let deadline = Date().addingTimeInterval(5)
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            if let path = socketPath(), case .success(let socket) = UnixSocket.connect(to: path) {
                close(socket)
                close(descriptor)
                return false
            }
            guard Date() < deadline else {
                close(descriptor)
                return false
            }
            usleep(50_000)
        }
        // Kept open (and locked) for the life of the process.
        return true
    }
}
