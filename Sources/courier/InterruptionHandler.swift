import Dispatch
import Foundation
import NIOConcurrencyHelpers

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Catches SIGINT, SIGTERM and SIGHUP while a transfer runs, cleans up, and exits as the signal would have
/// (status 128 + the signal number), so an interrupted `courier get -o FILE` leaves no temporary file behind.
///
/// A signal the tool was started with ignored (`nohup`, a script's background job) stays ignored.
///
/// The signals are caught by a handler installed with `sigaction` before `init` returns, which writes the signal's
/// number into a pipe; a dispatch source reads the pipe and runs the cleanup. A dispatch signal source alone is not
/// enough: it needs the signal ignored first and is armed later, on libdispatch's own thread, and a signal that comes
/// in between is discarded by the kernel — the tool then ran on to the end after a Ctrl-C. The pipe keeps a signal
/// that comes before the reading source is armed.
///
/// One handler at a time per process: the signal handler finds the pipe through a process-wide variable.
final class InterruptionHandler {
    private static let signals: [Int32] = [SIGINT, SIGTERM, SIGHUP]
    /// The pipe's write end, for the signal handler (which can capture nothing). Set before any handler is installed
    /// and never closed while one might run.
    nonisolated(unsafe) private static var pipeWriteEnd: Int32 = -1

    private var source: (any DispatchSourceRead)?
    private var previous: [(signal: Int32, action: sigaction)] = []
    private let interrupting = NIOLockedValueBox(false)

    /// Whether a signal came and the tool is cleaning up to exit: the main flow must not exit on its own (with
    /// another status) while the cleanup runs.
    var isInterrupting: Bool { interrupting.withLockedValue { $0 } }

    /// Starts catching the signals: a signal that comes after `init` returns is never lost. `onInterrupt` runs once,
    /// on a background queue; then `finish` gets 128 + the signal's number (by default the process exits with it).
    init(
        onInterrupt: @escaping @Sendable () -> Void,
        finish: @escaping @Sendable (Int32) -> Void = { exit($0) }
    ) {
        guard let ends = Self.makePipe() else {
            // Without a pipe the signals keep their default action: the tool still stops, only without cleaning up.
            return
        }
        // A full pipe must not block the signal handler; one byte per signal is all the reader needs.
        _ = fcntl(ends[1], F_SETFL, fcntl(ends[1], F_GETFL) | O_NONBLOCK)
        Self.pipeWriteEnd = ends[1]

        let readEnd = ends[0]
        let source = DispatchSource.makeReadSource(
            fileDescriptor: readEnd, queue: DispatchQueue(label: "courier.signals"))
        source.setEventHandler { [interrupting] in
            var number: UInt8 = 0
            guard read(readEnd, &number, 1) == 1 else { return }
            let first = interrupting.withLockedValue { interrupting in
                defer { interrupting = true }
                return !interrupting
            }
            guard first else { return }
            onInterrupt()
            finish(128 + Int32(number))
        }
        source.setCancelHandler { close(readEnd) }
        source.resume()
        self.source = source

        for number in Self.signals {
            var old = sigaction()
            sigaction(number, nil, &old)
            if Self.isIgnored(old) { continue }
            var action = sigaction()
            Self.setHandler(&action)
            sigemptyset(&action.sa_mask)
            action.sa_flags = SA_RESTART
            sigaction(number, &action, nil)
            previous.append((number, old))
        }
    }

    /// A pipe whose ends are close-on-exec from the start (`pipe2` with `O_CLOEXEC`), or `nil`. Set afterwards, a
    /// process another thread started in between (a download's launch command, a test's child) would inherit them.
    static func makePipe() -> [Int32]? {
        var ends: [Int32] = [-1, -1]
        let result: Int32 = ends.withUnsafeMutableBufferPointer { pointer in
            if let pipe2 = Self.pipe2 { return pipe2(pointer.baseAddress!, O_CLOEXEC) }
            // A C library without pipe2: close-on-exec right after, which leaves a small window.
            guard pipe(pointer.baseAddress!) == 0 else { return -1 }
            for end in pointer { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
            return 0
        }
        return result == 0 ? ends : nil
    }

    private typealias Pipe2 = @convention(c) (UnsafeMutablePointer<Int32>, Int32) -> Int32

    /// glibc's `pipe2`, looked up at run time (the C library's module does not declare it: a GNU extension).
    private static let pipe2: Pipe2? = {
        #if os(Linux)
            return dlsym(nil, "pipe2").map { unsafeBitCast($0, to: Pipe2.self) }
        #else
            return nil
        #endif
    }()

    /// Stops catching the signals and restores the actions they had before.
    func stop() {
        for (number, action) in previous {
            var restored = action
            sigaction(number, &restored, nil)
        }
        previous = []
        source?.cancel()
        source = nil
    }

    /// The signal handler: only `write(2)`, which is async-signal-safe, and `errno` put back as it was.
    private static let handler: @convention(c) (Int32) -> Void = { number in
        let saved = errno
        var byte = UInt8(truncatingIfNeeded: number)
        _ = write(InterruptionHandler.pipeWriteEnd, &byte, 1)
        errno = saved
    }

    private static func setHandler(_ action: inout sigaction) {
        #if canImport(Glibc) || canImport(Musl)
            action.__sigaction_handler.sa_handler = handler
        #else
            action.__sigaction_u.__sa_handler = handler
        #endif
    }

    private static func isIgnored(_ action: sigaction) -> Bool {
        #if canImport(Glibc) || canImport(Musl)
            return unsafeBitCast(action.__sigaction_handler.sa_handler, to: Int.self)
                == unsafeBitCast(SIG_IGN, to: Int.self)
        #else
            return unsafeBitCast(action.__sigaction_u.__sa_handler, to: Int.self)
                == unsafeBitCast(SIG_IGN, to: Int.self)
        #endif
    }
}
