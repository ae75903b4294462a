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
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            // Without a pipe the signals keep their default action: the tool still stops, only without cleaning up.
            return
        }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
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
