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
final class InterruptionHandler {
    private static let signals: [Int32] = [SIGINT, SIGTERM, SIGHUP]
    private var sources: [any DispatchSourceSignal] = []
    private var previous: [(signal: Int32, action: sigaction)] = []
    private let interrupting = NIOLockedValueBox(false)

    /// Whether a signal came and the tool is cleaning up to exit: the main flow must not exit on its own (with
    /// another status) while the cleanup runs.
    var isInterrupting: Bool { interrupting.withLockedValue { $0 } }

    /// Starts catching the signals; `onInterrupt` runs once, on a background queue, before the tool exits.
    init(onInterrupt: @escaping @Sendable () -> Void) {
        let queue = DispatchQueue(label: "courier.signals")
        for number in Self.signals {
            var old = sigaction()
            sigaction(number, nil, &old)
            if Self.isIgnored(old) { continue }
            previous.append((number, old))
            // The default action would end the process before the source could run.
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { [interrupting] in
                interrupting.withLockedValue { $0 = true }
                onInterrupt()
                exit(128 + number)
            }
            source.resume()
            sources.append(source)
        }
    }

    /// Stops catching the signals and restores the actions they had before.
    func stop() {
        for source in sources { source.cancel() }
        for (number, action) in previous {
            var restored = action
            sigaction(number, &restored, nil)
        }
        sources = []
        previous = []
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
