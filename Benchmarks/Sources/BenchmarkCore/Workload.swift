import Foundation

/// Runs one scenario against one client and checks every response.
struct Workload: Sendable {
    let options: BenchmarkOptions

    /// The body size of the small resource.
    static let smallSize: Int64 = 64

    func run<Client: BenchmarkClient>(_ client: Client, into measurement: inout Measurement) async throws {
        switch options.scenario {
        case .a, .b:
            try await requestRate(client, base: options.base, into: &measurement)
        case .e:
            guard let tlsBase = options.tlsBase else { throw UsageError(message: "scenario e needs --tls-base") }
            try await requestRate(client, base: tlsBase, into: &measurement)
        case .c:
            let url = options.base.appendingPathComponent(String(options.bigPath.dropFirst()))
            try await transfer(into: &measurement) { try await client.download(url) }
        case .d:
            let url = options.base.appendingPathComponent(String(options.bigPath.dropFirst()))
            try await transfer(into: &measurement) { try await client.stream(url) }
        case .f:
            guard let file = options.uploadFile else { throw UsageError(message: "scenario f needs --upload-file") }
            let size = try fileSize(file)
            let url = options.base.appendingPathComponent("sink")
            let start = Clock.now()
            let outcome = try await client.upload(url, file: file)
            let elapsed = Double(Clock.now() - start) / 1e9
            try check(outcome, status: 204, atLeast: size, what: "PUT /sink")
            record(bytes: size, seconds: elapsed, into: &measurement)
        }
    }

    private func requestRate<Client: BenchmarkClient>(
        _ client: Client,
        base: URL,
        into measurement: inout Measurement
    ) async throws {
        let url = base.appendingPathComponent(String(options.smallPath.dropFirst()))
        let total = options.requests
        let inFlight = options.concurrencyFor
        // A failing worker does not cancel the others (FoundationNetworking can deadlock when a Swift task
        // is cancelled while its URLSessionTask completes); it raises a flag and every worker stops at its
        // next request.
        let failure = FirstFailure()
        let start = Clock.now()
        var latencies = await withTaskGroup(of: [UInt64].self) { group in
            for worker in 0..<inFlight {
                group.addTask {
                    var mine: [UInt64] = []
                    mine.reserveCapacity(total / inFlight + 1)
                    var index = worker
                    while index < total, !failure.isSet {
                        do {
                            let begin = Clock.now()
                            let outcome = try await client.get(url)
                            let end = Clock.now()
                            try check(outcome, status: 200, exactly: Workload.smallSize, what: "GET \(url.path)")
                            mine.append(end - begin)
                        } catch {
                            failure.record(error)
                        }
                        index += inFlight
                    }
                    return mine
                }
            }
            var all: [UInt64] = []
            all.reserveCapacity(total)
            for await part in group { all.append(contentsOf: part) }
            return all
        }
        if let error = failure.error { throw error }
        let elapsed = Double(Clock.now() - start) / 1e9
        guard latencies.count == total else {
            throw CheckFailure(message: "\(latencies.count) of \(total) requests completed")
        }
        latencies.sort()
        measurement.requests = total
        measurement.bytes = Int64(total) * Workload.smallSize
        measurement.seconds = elapsed
        measurement.requestsPerSecond = Double(total) / elapsed
        measurement.p50Milliseconds = Percentile.of(latencies, 0.50)
        measurement.p99Milliseconds = Percentile.of(latencies, 0.99)
    }

    private func transfer(into measurement: inout Measurement, _ body: () async throws -> Outcome) async throws {
        let start = Clock.now()
        let outcome = try await body()
        let elapsed = Double(Clock.now() - start) / 1e9
        if let file = outcome.file { try? FileManager.default.removeItem(at: file) }
        try check(outcome, status: 200, exactly: options.bigSize, what: "GET \(options.bigPath)")
        record(bytes: options.bigSize, seconds: elapsed, into: &measurement)
    }

    private func record(bytes: Int64, seconds: Double, into measurement: inout Measurement) {
        measurement.requests = 1
        measurement.bytes = bytes
        measurement.seconds = seconds
        measurement.megabytesPerSecond = Double(bytes) / 1e6 / seconds
    }
}

private func check(_ outcome: Outcome, status: Int, exactly bytes: Int64, what: String) throws {
    guard outcome.status == status, outcome.bytes == bytes else {
        throw CheckFailure(
            message: "\(what): expected status \(status) and \(bytes) bytes, got \(outcome.status) and \(outcome.bytes)"
        )
    }
}

private func check(_ outcome: Outcome, status: Int, atLeast bytes: Int64, what: String) throws {
    guard outcome.status == status, outcome.bytes >= bytes else {
        throw CheckFailure(
            message: "\(what): expected status \(status) and at least \(bytes) bytes received by the server, "
                + "got \(outcome.status) and \(outcome.bytes)"
        )
    }
}

/// The size of the file at `file`.
public func fileSize(_ file: URL) throws -> Int64 {
    let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
    guard let size = attributes[.size] as? NSNumber else {
        throw CheckFailure(message: "cannot read the size of \(file.path)")
    }
    return size.int64Value
}

/// A response that failed its check: the run does not count.
public struct CheckFailure: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }

    public init(message: String) {
        self.message = message
    }
}

/// The first error any worker met; once set, all workers stop.
final class FirstFailure: @unchecked Sendable {
    private let lock = NSLock()
    private var first: (any Error)?

    var isSet: Bool {
        lock.lock()
        defer { lock.unlock() }
        return first != nil
    }

    var error: (any Error)? {
        lock.lock()
        defer { lock.unlock() }
        return first
    }

    func record(_ error: any Error) {
        lock.lock()
        if first == nil { first = error }
        lock.unlock()
    }
}
