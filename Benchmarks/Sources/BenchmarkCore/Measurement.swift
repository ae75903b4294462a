import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What one client process reports for one scenario: printed as one JSON line on standard output.
public struct Measurement: Codable, Sendable {
    public var client: String
    public var scenario: String
    /// `ok`, `error`, `unsupported` (Courier has not implemented the feature yet) or `n/a`.
    public var status: String
    public var detail: String?
    public var requests: Int = 0
    public var bytes: Int64 = 0
    /// Wall-clock seconds of the measured work (after the client is created, until the last response).
    public var seconds: Double = 0
    public var requestsPerSecond: Double?
    /// 10^6 bytes per second.
    public var megabytesPerSecond: Double?
    public var p50Milliseconds: Double?
    public var p99Milliseconds: Double?
    /// What scenarios (g) and (h) verified beyond status and size: `h2 on 1 of 2000 responses`, `X-Via-Proxy on all
    /// 2000 responses`.
    public var verified: String?
    /// The process's own getrusage at exit, as a cross-check of what the driver reads with wait4.
    public var cpuSeconds: Double?
    /// CPU seconds of the measured work alone (getrusage before the workload and after it): without the process's
    /// start-up, the client's creation and its shutdown, which the driver's wait4 figure includes.
    public var workCPUSeconds: Double?
    public var maxRSSKiB: Int?
    /// (i): the process's own peak RSS (`VmHWM`) just before the requests started (the client created), so that the
    /// driver can tell what the queued tasks cost: (own peak − this) / requests.
    public var rssBeforeKiB: Int?
    /// (k): the process's resident set (`VmRSS`) before the first request, after every 1,000 queued, after the last
    /// and once the queue settled, in KiB.
    public var queuedRSSKiB: [Int]?

    public init(client: String, scenario: String, status: String, detail: String? = nil) {
        self.client = client
        self.scenario = scenario
        self.status = status
        self.detail = detail
    }

    /// The peak resident set of this process's own memory since it started (`VmHWM` in `/proc/self/status`), in
    /// KiB. Unlike `ru_maxrss` (which `wait4` reports too), it does not carry over the peak of the process this one
    /// was forked from: the harness's launcher is bigger than Go's client, so `ru_maxrss` hid the smallest figures.
    public var ownPeakRSSKiB: Int?

    /// Reads `VmHWM` from `/proc/self/status`.
    public static func ownPeakRSS() -> Int? { ownStatus("VmHWM:") }

    /// Reads `VmRSS` (the resident set now) from `/proc/self/status`.
    public static func ownRSS() -> Int? { ownStatus("VmRSS:") }

    private static func ownStatus(_ key: String) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix(key) {
            return Int(line.split(separator: " ").dropFirst().first { !$0.isEmpty }.map(String.init) ?? "")
        }
        return nil
    }

    /// Fills in CPU time and peak RSS of this process so far.
    public mutating func recordResourceUsage() {
        ownPeakRSSKiB = Self.ownPeakRSS()
        guard let usage = Self.ownUsage() else { return }
        cpuSeconds = Self.cpuSeconds(of: usage)
        maxRSSKiB = Int(usage.ru_maxrss)
    }

    /// User and system CPU seconds this process has used so far.
    public static func processCPUSeconds() -> Double? { ownUsage().map(cpuSeconds(of:)) }

    private static func ownUsage() -> rusage? {
        var usage = rusage()
        #if canImport(Glibc)
            let who = RUSAGE_SELF.rawValue
        #else
            let who = RUSAGE_SELF
        #endif
        return getrusage(who, &usage) == 0 ? usage : nil
    }

    private static func cpuSeconds(of usage: rusage) -> Double {
        func seconds(_ value: timeval) -> Double { Double(value.tv_sec) + Double(value.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    /// The JSON line.
    public func jsonLine() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let data = try? encoder.encode(self), let line = String(data: data, encoding: .utf8) else {
            return #"{"status":"error","detail":"could not encode the measurement"}"#
        }
        return line
    }
}

/// Percentiles of a latency sample (nearest-rank).
public enum Percentile {
    public static func of(_ sortedNanoseconds: [UInt64], _ fraction: Double) -> Double? {
        guard !sortedNanoseconds.isEmpty else { return nil }
        let rank = Int((fraction * Double(sortedNanoseconds.count)).rounded(.up))
        let index = min(max(rank - 1, 0), sortedNanoseconds.count - 1)
        return Double(sortedNanoseconds[index]) / 1e6
    }
}

/// A monotonic clock in nanoseconds.
public enum Clock {
    public static func now() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
    }
}
