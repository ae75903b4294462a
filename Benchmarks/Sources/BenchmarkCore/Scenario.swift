/// The six workloads of the benchmark, named by the letters the tracker uses.
public enum Scenario: String, CaseIterable, Sendable {
    /// (a) Sequential 64-byte GETs on one connection.
    case a
    /// (b) 64-byte GETs with 64 in flight.
    case b
    /// (c) A large file downloaded to a file.
    case c
    /// (d) A large file streamed to a handler that discards it.
    case d
    /// (e) Scenario (b) over HTTPS.
    case e
    /// (f) An upload from a file.
    case f

    /// What the scenario does, for reports.
    public var summary: String {
        switch self {
        case .a: return "sequential 64 B GETs, one connection"
        case .b: return "64 B GETs, 64 in flight"
        case .c: return "large file downloaded to a file"
        case .d: return "large file streamed to a discarding handler"
        case .e: return "64 B GETs, 64 in flight, HTTPS"
        case .f: return "upload from a file"
        }
    }

    /// Whether the scenario is many small requests (reported in req/s with latencies) or one transfer (MB/s).
    public var isRequestRate: Bool {
        switch self {
        case .a, .b, .e: return true
        case .c, .d, .f: return false
        }
    }
}
