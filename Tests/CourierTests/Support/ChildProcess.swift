import CourierTestSupport
import Foundation
import NIOConcurrencyHelpers

@testable import courier

#if canImport(Glibc)
    import Glibc
#endif

/// A child process started with `posix_spawn`, for the tests that run the `courier` executable or this test binary.
///
/// Not Foundation's `Process`: on Linux its `run()` (swift-corelibs-foundation, in Swift 6.3.1 at least) now and then
/// crashes the parent while it lists `/proc/self/fd` (an over-read of `dirent.d_name`, fixed upstream by
/// swift-corelibs-foundation PR 5472), and a test suite that starts children in parallel met it. This starts the
/// child with nothing but standard input from `/dev/null`, the chosen outputs, and no other descriptor of ours
/// (`posix_spawn_file_actions_addclosefrom_np`), so a child never holds a test server's socket open; the pipes'
/// other ends are closed in the child by that too.
final class ChildProcess: Sendable {
    /// Where a child's standard output or error goes.
    enum Output {
        /// `/dev/null`.
        case discard
        /// A pipe the test reads from (``standardOutput``, ``standardError``).
        case pipe
        /// The test process's own descriptor.
        case inherit
        /// This descriptor of the test process (a pseudo-terminal's end, say).
        case descriptor(Int32)
    }

    let processIdentifier: pid_t
    /// The read end of the child's standard output, with ``Output/pipe``.
    let standardOutput: FileHandle?
    /// The read end of the child's standard error, with ``Output/pipe``.
    let standardError: FileHandle?
    /// The exit status once reaped: the exit code, or 128 + the signal number for a child a signal ended (as a
    /// shell reports it).
    private let status = NIOLockedValueBox<Int32?>(nil)

    /// Starts `executable` with `arguments` (not counting the program name) and `environment` (default: ours).
    init(
        _ executable: String,
        _ arguments: [String],
        environment: [String: String]? = nil,
        standardOutput output: Output = .discard,
        standardError error: Output = .discard
    ) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        var childEnds: [Int32] = []
        func route(_ output: Output, to descriptor: Int32) throws -> FileHandle? {
            switch output {
            case .discard:
                posix_spawn_file_actions_addopen(&actions, descriptor, "/dev/null", O_WRONLY, 0)
                return nil
            case .inherit:
                return nil
            case .descriptor(let source):
                posix_spawn_file_actions_adddup2(&actions, source, descriptor)
                return nil
            case .pipe:
                let ends = try Self.closeOnExecPipe()
                childEnds.append(ends.write)
                // dup2 in the child clears close-on-exec on the copy at `descriptor`.
                posix_spawn_file_actions_adddup2(&actions, ends.write, descriptor)
                return FileHandle(fileDescriptor: ends.read, closeOnDealloc: true)
            }
        }
        standardOutput = try route(output, to: 1)
        standardError = try route(error, to: 2)
        if let closeFrom = Self.closeFrom {
            _ = closeFrom(&actions, 3)
        }

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let environmentPairs = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
        let envp = environmentPairs.map { strdup($0) } + [nil]
        defer {
            for string in argv + envp { free(string) }
        }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        for end in childEnds { close(end) }
        // The read ends belong to the file handles, which close them when they go.
        guard result == 0 else { throw POSIXError(.init(rawValue: result) ?? .EIO) }
        processIdentifier = pid
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which Swift's Glibc module does not
    /// declare: it is a GNU extension. (Also for a test that spawns a child of its own.)
    static let closeFrom: CloseFrom? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np")
        else { return nil }
        return unsafeBitCast(symbol, to: CloseFrom.self)
    }()

    typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32

    /// A pipe whose two ends are close-on-exec from the start (`pipe2` with `O_CLOEXEC`, the `courier` tool's own
    /// ``InterruptionHandler/makePipe()``). With `pipe` another test's child started in between (a daemon started
    /// without closing our descriptors) inherited the write end, and the reader here saw no end of file until that
    /// child exited.
    static func closeOnExecPipe() throws -> (read: Int32, write: Int32) {
        guard let ends = InterruptionHandler.makePipe() else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        return (ends[0], ends[1])
    }

    /// Whether the child has not exited yet (it is reaped, without waiting, if it has).
    var isRunning: Bool {
        status.withLockedValue { status in
            guard status == nil else { return false }
            var raw: Int32 = 0
            switch waitpid(processIdentifier, &raw, WNOHANG) {
            case 0: return true
            case processIdentifier: status = Self.decode(raw)
            default: break  // reaped by exitStatus(), which is about to record it
            }
            return false
        }
    }

    /// Sends `signal` to the child.
    func send(_ signal: Int32) {
        kill(processIdentifier, signal)
    }

    /// Waits for the child to exit (on a dispatch thread, never on the cooperative pool) and returns its status:
    /// the exit code, or 128 + the signal number.
    @discardableResult
    func exitStatus() async -> Int32 {
        if let known = status.withLockedValue({ $0 }) { return known }
        return await onOwnThread {
            var raw: Int32 = 0
            while waitpid(self.processIdentifier, &raw, 0) == -1 && errno == EINTR {}
            return self.status.withLockedValue { status in
                if status == nil { status = Self.decode(raw) }
                return status ?? -1
            }
        }
    }

    private static func decode(_ raw: Int32) -> Int32 {
        let signal = raw & 0x7f
        return signal == 0 ? (raw >> 8) & 0xff : 128 + signal
    }
}
