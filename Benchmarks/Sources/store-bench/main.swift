// The cost of Courier's stores, in one process, on loopback:
// - a cache hit's latency against a network round trip to the same local server (sequential GETs of a 1 KiB
//   resource that is fresh for an hour: served by the cache, then loaded with `.reloadIgnoringLocalCacheData`);
// - `HTTPCookieStorage.cookies(for:)` with 10, 1,000 and 10,000 stored cookies.
// Rounds alternate between the measured variants; each figure is the median over the rounds.
// Run: swift run -c release --package-path Benchmarks store-bench [rounds]
import Courier
import CourierMockServer
import Foundation
import MicroBenchSupport

let rounds = roundsFromCommandLine()
let requestsPerRound = 2_000
let lookupsPerRound = 20_000

/// Runs `count` sequential GETs and returns the median and 99th percentile latency in µs.
func measureRequests(_ session: URLSession, _ request: URLRequest, count: Int) async throws -> (Double, Double) {
    let latencies = try await sequentialLatencies(session, request, count: count, bytes: 1024)
    return (latencies[count / 2], latencies[count * 99 / 100])
}

let server = MockServer()
server.route(
    "/resource",
    response: MockResponse(
        status: 200, headers: [("Cache-Control", "max-age=3600"), ("Content-Type", "application/octet-stream")],
        body: .data(Data(repeating: 0x61, count: 1024))))
try await server.start()

let configuration = URLSessionConfiguration.ephemeral
configuration.urlCache = URLCache(memoryCapacity: 8 << 20, diskCapacity: 0)
let session = URLSession(configuration: configuration)
let cached = URLRequest(url: server.baseURL.appendingPathComponent("resource"))
var network = cached
network.cachePolicy = .reloadIgnoringLocalCacheData
_ = try await session.data(for: cached)  // fills the cache and opens the connection

var hitMedians: [Double] = []
var hitP99: [Double] = []
var networkMedians: [Double] = []
var networkP99: [Double] = []
for round in 0..<rounds {
    for variant in variantOrder(round: round) {
        let (p50, p99) = try await measureRequests(
            session, variant == 0 ? cached : network, count: requestsPerRound)
        if variant == 0 {
            hitMedians.append(p50)
            hitP99.append(p99)
        } else {
            networkMedians.append(p50)
            networkP99.append(p99)
        }
    }
}
session.invalidateAndCancel()
try await server.shutdown()

func cookie(_ index: Int, domains: Int) -> HTTPCookie {
    HTTPCookie(properties: [
        // Each domain its own site (`dN.test`): the storage keeps at most 180 cookies per site, so sites that were
        // subdomains of one (`dN.example.test`) had all but the last 180 cookies evicted.
        .name: "c\(index)", .value: "v", .domain: ".d\(index % domains).test", .path: "/",
        .expires: Date(timeIntervalSinceNow: 3600),
    ])!
}

var lookupRows: [(count: Int, nanoseconds: Double, found: Int)] = []
for count in [10, 1_000, 10_000] {
    let storage = HTTPCookieStorage()
    let domains = max(1, count / 10)
    for index in 0..<count { storage.setCookie(cookie(index, domains: domains)) }
    let url = URL(string: "https://www.d7.test/path")!
    var perLookup: [Double] = []
    var found = 0
    for _ in 0..<rounds {
        let start = ContinuousClock.now
        for _ in 0..<lookupsPerRound { found = storage.cookies(for: url)?.count ?? 0 }
        let elapsed = ContinuousClock.now - start
        let nanoseconds = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
        perLookup.append(nanoseconds / Double(lookupsPerRound))
    }
    lookupRows.append((count, median(perLookup), found))
}

print("## Cache and cookies (store-bench)")
print()
print("Command: `swift run -c release --package-path Benchmarks store-bench \(rounds)`; \(rounds) rounds, medians.")
print()
print("| 1 KiB GET, sequential, one connection | p50 µs | p99 µs |")
print("| --- | --- | --- |")
print("| cache hit (fresh, memory tier) | \(format(median(hitMedians))) | \(format(median(hitP99))) |")
print(
    "| network round trip (`.reloadIgnoringLocalCacheData`) | \(format(median(networkMedians))) | \(format(median(networkP99))) |"
)
print()
print("| cookies stored | `cookies(for:)` ns per lookup | cookies returned |")
print("| --- | --- | --- |")
for row in lookupRows {
    print("| \(row.count) | \(format(row.nanoseconds)) | \(row.found) |")
}
