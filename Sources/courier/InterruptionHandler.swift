import Dispatch
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Catches SIGINT, SIGTERM and SIGHUP while a transfer runs, cleans up, and exits as the signal would have
/// (status 128 + the signal number), so an interrupted `courier get -o FILE` leaves no temporary file behind.
final class InterruptionHandler {
    private static let signals: [Int32] = [SIGINT, SIGTERM, SIGHUP]
    private let sources: [any DispatchSourceSignal]

    /// Starts catching the signals; `onInterrupt` runs once, on a background queue, before the tool exits.
    init(onInterrupt: @escaping @Sendable () -> Void) {
        let queue = DispatchQueue(label: "courier.signals")
        sources = Self.signals.map { number in
            // The default action would end the process before the source could run.
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler {
                onInterrupt()
                exit(128 + number)
            }
            source.resume()
            return source
        }
    }

    /// Stops catching the signals and restores their default actions.
    func stop() {
        for source in sources { source.cancel() }
        for number in Self.signals { signal(number, SIG_DFL) }
    }
}
