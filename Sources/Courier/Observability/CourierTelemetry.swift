import CoreMetrics
import Logging
import Tracing

/// Courier extension: how a session's tasks show up in the app's tracing, metrics and logs (swift-distributed-tracing,
/// swift-metrics, swift-log).
///
/// By default a session uses whatever the process bootstrapped — `InstrumentationSystem.tracer` and
/// `MetricsSystem.factory` — and, when nothing was bootstrapped (the no-op tracer and metrics factory), records
/// nothing and costs nothing. Set ``tracer``, ``metricsFactory`` or ``logger`` to send one session's telemetry
/// elsewhere (tests do, with `InMemoryTracer` and `TestMetrics`). See the "Observing Courier in production" article
/// for the spans, attributes, metric names and log lines.
///
/// ```swift
/// let configuration = URLSessionConfiguration.default
/// configuration.courierTelemetry.propagatesTraceContext = false  // a third-party API
/// configuration.courierTelemetry.metricsIncludeHost = true
/// ```
public struct CourierTelemetry: Sendable {
    /// The tracer the session's spans go to; `nil` (the default) means `InstrumentationSystem.tracer`.
    public var tracer: (any Tracer)?
    /// The factory of the session's metrics; `nil` (the default) means `MetricsSystem.factory`.
    public var metricsFactory: (any MetricsFactory)?
    /// The logger of the session's tasks and connections; `nil` (the default) means `Logger(label: "courier")`.
    public var logger: Logger?
    /// Whether the tracer's propagation headers (W3C `traceparent` and `tracestate` with swift-otel) are added to
    /// every request the session sends, redirects and retries included. A request that already carries a
    /// `traceparent` field is left as it is. Turn it off for sessions that talk to third parties. Default: `true`.
    public var propagatesTraceContext = true
    /// Whether spans keep the URL's query in `url.full` (credentials are always removed). Default: `false`, as a
    /// query often carries tokens.
    public var recordsURLQuery = false
    /// Whether metrics carry a `host` dimension. Default: `false`, to keep their cardinality low.
    public var metricsIncludeHost = false

    /// Telemetry that follows the process's bootstrapped systems.
    public init() {}
}
