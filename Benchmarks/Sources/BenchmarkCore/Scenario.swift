/// The workloads of the benchmark, named by the letters the tracker uses.
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
    /// (g) Scenario (e) over HTTP/2: all requests multiplexed on one connection.
    case g
    /// (h) Scenario (b) through an HTTP forward proxy (absolute-form requests).
    case h
    /// (i) 10,000 64-byte GETs started at once through one session of at most 64 connections: what queued tasks
    /// cost in memory.
    case i
    /// (j) Sequential 64-byte GETs, each on a session (client) of its own: what creating a session costs.
    case j
    /// (k) 10,000 64-byte GETs queued, without a Swift task each, through one session of at most 64 connections to a
    /// server that never answers: what a queued request costs the client in memory, sampled every 1,000.
    case k
    /// (l) The large file downloaded to a file by a background session: the transfer runs in Courier's daemon
    /// (`courierd`), the file is handed to the app's delegate.
    case l

    /// What the scenario does, for reports.
    public var summary: String {
        switch self {
        case .a: return "sequential 64 B GETs, one connection"
        case .b: return "64 B GETs, 64 in flight"
        case .c: return "large file downloaded to a file"
        case .d: return "large file streamed to a discarding handler"
        case .e: return "64 B GETs, 64 in flight, HTTPS"
        case .f: return "upload from a file"
        case .g: return "64 B GETs, 64 in flight, HTTPS with HTTP/2"
        case .h: return "64 B GETs, 64 in flight, through an HTTP proxy"
        case .i: return "10,000 64 B GETs started at once, at most 64 connections"
        case .j: return "sequential 64 B GETs, a new session for each"
        case .k: return "10,000 64 B GETs queued at a server that never answers, at most 64 connections"
        case .l: return "large file downloaded to a file by a background session (courierd)"
        }
    }
}
