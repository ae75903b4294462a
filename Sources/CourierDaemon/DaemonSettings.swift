import Foundation

/// How `courierd` paces itself, from its environment (documented in the README's background section).
public struct DaemonSettings: Sendable {
    /// How long the daemon stays with no client and no transfer to run before it exits (`COURIERD_IDLE_TIMEOUT`,
    /// seconds; default 60).
    public var idleTimeout: TimeInterval
    /// The first retry's delay after a transient failure, doubled after each failure that made no progress
    /// (`COURIERD_RETRY_BASE`, seconds; default 1).
    public var retryBase: TimeInterval
    /// The longest delay between retries (`COURIERD_RETRY_MAX`, seconds; default 60).
    public var retryMaximum: TimeInterval
    /// How many transfers run at once (`COURIERD_MAX_TRANSFERS`; default 4, at most 4,096).
    public var maximumTransfers: Int
    /// How often a checkpoint also flushes the partial file to disk (`COURIERD_FLUSH_INTERVAL`, seconds; default 30,
    /// the kernel's own writeback age): what a power cut can cost again.
    public var flushInterval: TimeInterval
    /// Bytes between two checkpoints of a download (journaled; see `flushInterval`)
    /// (`COURIERD_CHECKPOINT_BYTES`; default 16 MiB): a crash of the daemon costs at most this much, or
    /// ``checkpointInterval`` of transfer, again.
    public var checkpointBytes: Int64
    /// The longest time between two checkpoints of a download that is receiving bytes
    /// (`COURIERD_CHECKPOINT_INTERVAL`, seconds; default 1).
    public var checkpointInterval: TimeInterval

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        func number(_ name: String, _ fallback: Double) -> Double {
            guard let text = environment[name], let value = Double(text), value.isFinite, value >= 0 else {
                return fallback
            }
            return value
        }
        idleTimeout = number("COURIERD_IDLE_TIMEOUT", 60)
        retryBase = number("COURIERD_RETRY_BASE", 1)
        retryMaximum = number("COURIERD_RETRY_MAX", 60)
        // Clamped before the conversion: an integer conversion of a value past the type's range traps (`1e19`).
        maximumTransfers = max(1, Int(min(number("COURIERD_MAX_TRANSFERS", 4), 4096)))
        checkpointInterval = number("COURIERD_CHECKPOINT_INTERVAL", 1)
        checkpointBytes = max(4096, Int64(min(number("COURIERD_CHECKPOINT_BYTES", Double(16 << 20)), 0x1p62)))
        flushInterval = number("COURIERD_FLUSH_INTERVAL", 30)
    }
}
