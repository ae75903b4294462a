import CoreMetrics
import Foundation
import Logging
import NIOConcurrencyHelpers
import Tracing

/// A session's telemetry, resolved once when the session is made: the tracer and the metrics it records to, or
/// `nil` for each when that system is the no-op one, so that a process that bootstrapped nothing pays for nothing
/// but the check.
final class SessionTelemetry: Sendable {
    let options: CourierTelemetry
    /// The tracer, unless it is the no-op tracer.
    let tracer: (any Tracer)?
    /// The metrics, unless the factory is the no-op one.
    let metrics: SessionMetrics?
    /// The session's logger, with its `courier.session` metadata when it lets debug lines out.
    let logger: Logger
    /// A number for the session, unique in the process, for log lines.
    let sessionID: Int

    private static let nextSessionID = NIOLockedValueBox(0)

    init(options: CourierTelemetry) {
        self.options = options
        sessionID = Self.nextSessionID.withLockedValue { value in
            value += 1
            return value
        }
        let tracer = options.tracer ?? InstrumentationSystem.tracer
        self.tracer = tracer is NoOpTracer ? nil : tracer
        let factory = options.metricsFactory ?? MetricsSystem.factory
        metrics =
            factory is NOOPMetricsHandler
            ? nil : SessionMetrics(factory: factory, includesHost: options.metricsIncludeHost)
        var logger = options.logger ?? Logger(label: "courier")
        // Courier's lines on this logger are all debug and trace lines. Above that level none is printed, and setting
        // metadata costs a handler such as swift-log's `StreamLogHandler` a rendering of all of it, for every session.
        if logger.logLevel <= .debug { logger[metadataKey: "courier.session"] = "\(sessionID)" }
        self.logger = logger
    }

    /// Whether tasks need a ``TaskTelemetry`` at all.
    var isActive: Bool { tracer != nil || metrics != nil }
}
