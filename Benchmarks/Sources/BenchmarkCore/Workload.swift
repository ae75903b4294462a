import Foundation

/// Runs one scenario against one client and checks every response.
struct Workload: Sendable {
    let options: BenchmarkOptions
    /// How each client is set up ((j) makes a new one per request).
    let settings: ClientSettings

    /// The body size of the small resource.
    static let smallSize: Int64 = 64

    func run<Client: BenchmarkClient>(_ client: Client, into measurement: inout Measurement) async throws {
        switch options.scenario {
        case .a, .b:
            try await requestRate(client, base: options.base, into: &measurement)
        case .i:
            measurement.rssBeforeKiB = Measurement.ownPeakRSS()
            try await requestRate(client, base: options.base, into: &measurement)
        case .j:
            try await sessionPerRequest(Client.self, into: &measurement)
        case .k:
            guard let hold = options.holdBase else { throw UsageError(message: "scenario k needs --hold-base") }
            var samples = [Measurement.ownRSS() ?? 0]
            let start = Clock.now()
            try await client.queueHeld(hold.appendingPathComponent("held"), count: options.requests) {
                samples.append(Measurement.ownRSS() ?? 0)
            }
            measurement.requests = options.requests
            measurement.seconds = Double(Clock.now() - start) / 1e9
            measurement.queuedRSSKiB = samples
        case .e:
            guard let tlsBase = options.tlsBase else { throw UsageError(message: "scenario e needs --tls-base") }
            try await requestRate(client, base: tlsBase, into: &measurement)
        case .g:
            guard let h2Base = options.h2Base else { throw UsageError(message: "scenario g needs --h2-base") }
            try await requestRate(client, base: h2Base, route: .http2, into: &measurement)
        case .h:
            // The URL names the origin; the client sends it to the proxy (ClientSettings.proxy).
            guard options.proxy != nil else { throw UsageError(message: "scenario h needs --proxy") }
            try await requestRate(client, base: options.base, route: .proxy, into: &measurement)
        case .c:
            let url = options.base.appendingPathComponent(String(options.bigPath.dropFirst()))
            try await transfer(into: &measurement) { try await client.download(url) }
        case .d:
            let url = options.base.appendingPathComponent(String(options.bigPath.dropFirst()))
            try await transfer(into: &measurement) { try await client.stream(url) }
        case .l:
            let url = options.base.appendingPathComponent(String(options.bigPath.dropFirst()))
            try await transfer(into: &measurement) { try await client.backgroundDownload(url) }
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
        route: Route = .direct,
        into measurement: inout Measurement
    ) async throws {
        let url = base.appendingPathComponent(String(options.smallPath.dropFirst()))
        // Made once: a URL's path is parsed on every read, and the check below names the request on every response.
        let what = "GET \(url.path)"
        let total = options.requests
        let inFlight = options.concurrencyFor
        // A failing worker does not cancel the others (FoundationNetworking can deadlock when a Swift task
        // is cancelled while its URLSessionTask completes); it raises a flag and every worker stops at its
        // next request.
        let failure = FirstFailure()
        let start = Clock.now()
        // Each worker returns its latencies and how many of its responses told their protocol.
        let parts = await withTaskGroup(of: ([UInt64], Int).self) { group in
            for worker in 0..<inFlight {
                group.addTask {
                    var mine: [UInt64] = []
                    mine.reserveCapacity(total / inFlight + 1)
                    var protocolChecks = 0
                    var index = worker
                    while index < total, !failure.isSet {
                        do {
                            let begin = Clock.now()
                            let outcome = try await client.get(url)
                            let end = Clock.now()
                            try check(outcome, status: 200, exactly: Workload.smallSize, what: what)
                            if try route.check(outcome, what: what) { protocolChecks += 1 }
                            mine.append(end - begin)
                        } catch {
                            failure.record(error)
                        }
                        index += inFlight
                    }
                    return (mine, protocolChecks)
                }
            }
            var all: [([UInt64], Int)] = []
            for await part in group { all.append(part) }
            return all
        }
        if let error = failure.error { throw error }
        let elapsed = Double(Clock.now() - start) / 1e9
        var latencies = parts.flatMap(\.0)
        guard latencies.count == total else {
            throw CheckFailure(message: "\(latencies.count) of \(total) requests completed")
        }
        let protocolChecks = parts.reduce(0) { $0 + $1.1 }
        switch route {
        case .direct:
            break
        case .http2:
            // Every response must say how it came: a client that cannot tell would pass unverified otherwise.
            guard protocolChecks == total else {
                throw CheckFailure(
                    message: "h2 unverified: the client told the protocol of \(protocolChecks) of \(total) responses")
            }
            measurement.verified = "h2 on \(protocolChecks) of \(total) responses"
        case .proxy:
            measurement.verified = "\(viaProxyHeader) on all \(total) responses"
        }
        latencies.sort()
        measurement.requests = total
        measurement.bytes = Int64(total) * Workload.smallSize
        measurement.seconds = elapsed
        measurement.requestsPerSecond = Double(total) / elapsed
        measurement.p50Milliseconds = Percentile.of(latencies, 0.50)
        measurement.p99Milliseconds = Percentile.of(latencies, 0.99)
    }

    /// (j): each request on a client of its own, created and shut down around it (a session per request, as code
    /// that makes `URLSession(configuration:)` for every call does).
    private func sessionPerRequest<Client: BenchmarkClient>(
        _ type: Client.Type, into measurement: inout Measurement
    ) async throws {
        let url = options.base.appendingPathComponent(String(options.smallPath.dropFirst()))
        let what = "GET \(url.path)"
        var latencies: [UInt64] = []
        latencies.reserveCapacity(options.requests)
        let start = Clock.now()
        for _ in 0..<options.requests {
            let begin = Clock.now()
            let client = try await Client(settings: settings)
            let outcome = try await client.get(url)
            try await client.shutdown()
            latencies.append(Clock.now() - begin)
            try check(outcome, status: 200, exactly: Workload.smallSize, what: what)
        }
        let elapsed = Double(Clock.now() - start) / 1e9
        latencies.sort()
        measurement.requests = options.requests
        measurement.bytes = Int64(options.requests) * Workload.smallSize
        measurement.seconds = elapsed
        measurement.requestsPerSecond = Double(options.requests) / elapsed
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

/// What scenarios (g) and (h) check on every response besides its status and size.
enum Route: Sendable {
    /// Nothing more.
    case direct
    /// The response came over HTTP/2, wherever the client told its protocol.
    case http2
    /// The response came through the proxy (it carries `X-Via-Proxy`).
    case proxy

    /// Checks `outcome`; returns whether the client told its protocol (scenario g needs every response to).
    func check(_ outcome: Outcome, what: String) throws -> Bool {
        switch self {
        case .direct:
            return false
        case .http2:
            guard let name = outcome.protocolName else { return false }
            guard name == "h2" else {
                throw CheckFailure(message: "\(what): expected HTTP/2 (h2), the response came over \(name)")
            }
            return true
        case .proxy:
            guard outcome.viaProxy else {
                throw CheckFailure(
                    message: "\(what): the response has no \(viaProxyHeader) header: it did not come through the proxy"
                )
            }
            return false
        }
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
