import CoreMetrics
import CourierTransport
import NIOConcurrencyHelpers

/// A session's swift-metrics instruments: every name in one place (``Name``, documented in the "Observing Courier in
/// production" article), each handle made once per label and dimensions.
final class SessionMetrics: Sendable {
    /// The metric labels.
    enum Name {
        static let requestsStarted = "courier_requests_started_total"
        static let requestsCompleted = "courier_requests_completed_total"
        static let requestsFailed = "courier_requests_failed_total"
        static let requestDuration = "courier_request_duration_seconds"
        static let timeToFirstByte = "courier_time_to_first_byte_seconds"
        static let bytesSent = "courier_bytes_sent_total"
        static let bytesReceived = "courier_bytes_received_total"
        static let connectionsOpened = "courier_connections_opened_total"
        static let connectionsReused = "courier_connections_reused_total"
        static let connectDuration = "courier_connect_duration_seconds"
        static let tlsHandshakes = "courier_tls_handshakes_total"
        static let tlsHandshakeDuration = "courier_tls_handshake_duration_seconds"
        static let connections = "courier_connections"
        static let requestsQueued = "courier_requests_queued"
        static let downloadsActive = "courier_downloads_active"
        static let cacheLookups = "courier_cache_lookups_total"
    }

    private struct Key: Hashable {
        let label: String
        let dimensions: [String]

        init(_ label: String, _ dimensions: [(String, String)]) {
            self.label = label
            self.dimensions = dimensions.flatMap { [$0.0, $0.1] }
        }
    }

    private struct Handles {
        var counters: [Key: Counter] = [:]
        var timers: [Key: CoreMetrics.Timer] = [:]
        var meters: [Key: Meter] = [:]
        /// The pool statistics last applied to the gauges.
        var pool = PoolStatistics(sequence: 0, connecting: 0, idle: 0, busy: 0, waiting: 0)
    }

    let factory: any MetricsFactory
    let includesHost: Bool
    private let handles = NIOLockedValueBox(Handles())

    init(factory: any MetricsFactory, includesHost: Bool) {
        self.factory = factory
        self.includesHost = includesHost
    }

    func count(_ label: String, _ dimensions: [(String, String)] = [], by amount: Int64 = 1) {
        handle(label, dimensions, \.counters) { Counter(label: label, dimensions: dimensions, factory: factory) }
            .increment(by: amount)
    }

    func record(_ label: String, _ dimensions: [(String, String)] = [], nanoseconds: Int64) {
        handle(label, dimensions, \.timers) {
            CoreMetrics.Timer(label: label, dimensions: dimensions, factory: factory)
        }.recordNanoseconds(max(0, nanoseconds))
    }

    /// Moves a gauge (a `Meter`) by `delta`: several sessions add up in one process.
    func adjust(_ label: String, _ dimensions: [(String, String)] = [], by delta: Int) {
        guard delta != 0 else { return }
        let meter = handle(label, dimensions, \.meters) {
            Meter(label: label, dimensions: dimensions, factory: factory)
        }
        if delta > 0 {
            meter.increment(by: Double(delta))
        } else {
            meter.decrement(by: Double(-delta))
        }
    }

    /// The handle for `label` and `dimensions` in `table`, made once.
    private func handle<Handle>(
        _ label: String, _ dimensions: [(String, String)], _ table: WritableKeyPath<Handles, [Key: Handle]>,
        make: () -> Handle
    ) -> Handle {
        let key = Key(label, dimensions)
        return handles.withLockedValue { handles in
            if let existing = handles[keyPath: table][key] { return existing }
            let made = make()
            handles[keyPath: table][key] = made
            return made
        }
    }

    /// The session's pool changed: its connection and queue gauges move by the difference from the last report
    /// (older reports, which may come late from another thread, are ignored).
    func poolChanged(_ statistics: PoolStatistics) {
        let previous: PoolStatistics? = handles.withLockedValue { handles in
            guard statistics.sequence > handles.pool.sequence else { return nil }
            defer { handles.pool = statistics }
            return handles.pool
        }
        guard let previous else { return }
        adjust(Name.connections, [("state", "connecting")], by: statistics.connecting - previous.connecting)
        adjust(Name.connections, [("state", "idle")], by: statistics.idle - previous.idle)
        adjust(Name.connections, [("state", "busy")], by: statistics.busy - previous.busy)
        adjust(Name.requestsQueued, by: statistics.waiting - previous.waiting)
    }
}
