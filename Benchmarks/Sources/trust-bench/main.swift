// What Courier's own server-trust evaluation costs a TLS connection, in one process, on loopback:
// - sequential GETs over HTTPS, each on a new connection (the server answers `Connection: close`), through a session
//   without a delegate (NIOSSL verifies the chain) and through one with a delegate (the connection's trust is a
//   `SecTrust` evaluated by Courier, as the delegate may be asked about it); the difference is that evaluation;
// - `SecTrustEvaluateWithError` alone on the server's chain, with the server's certificate as the anchor and with it
//   as an additional trusted certificate beside the system's roots.
// Rounds alternate between the variants; each figure is the median over the rounds.
// Run: swift run -c release --package-path Benchmarks trust-bench [rounds]
import Courier
import CourierMockServer
import Foundation
import MicroBenchSupport

let rounds = roundsFromCommandLine()
let requestsPerRound = 300
let evaluationsPerRound = 300

/// A session delegate that answers nothing itself: every challenge gets the protocol's default handling.
final class PlainDelegate: NSObject, URLSessionDelegate, @unchecked Sendable {}

/// Runs `count` sequential GETs and returns the median latency in µs.
func measureRequests(_ session: URLSession, _ url: URL, count: Int) async throws -> Double {
    median(try await sequentialLatencies(session, URLRequest(url: url), count: count, bytes: 64))
}

/// Evaluates a new trust for `chain` `count` times and returns the median µs per evaluation.
func measureEvaluations(chain: [SecCertificate], anchored: Bool, count: Int) -> Double {
    var times: [Double] = []
    times.reserveCapacity(count)
    for _ in 0..<count {
        var trust: SecTrust?
        _ = SecTrustCreateWithCertificates(chain, SecPolicyCreateSSL(true, "127.0.0.1"), &trust)
        guard let trust else { fatalError("no trust") }
        if anchored { _ = SecTrustSetAnchorCertificates(trust, chain) }
        let start = ContinuousClock.now
        var error: NSError?
        let trusted = SecTrustEvaluateWithError(trust, &error)
        times.append(microseconds(ContinuousClock.now - start))
        precondition(trusted == anchored, "unexpected trust result: \(String(describing: error))")
    }
    return median(times)
}

let server = MockServer(scheme: .https)
let body = Data(repeating: 0x61, count: 64)
server.route("/close", response: MockResponse(status: 200, headers: [("Connection", "close")], body: .data(body)))
try await server.start()
let url = server.url("/close")

func makeSession(delegate: (any URLSessionDelegate)?) -> URLSession {
    let configuration = URLSessionConfiguration.ephemeral
    configuration.connectionProxyDictionary = [:]
    configuration.courierAdditionalTrustedCertificates = [Data(server.certificateDER)]
    return URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
}

let plain = makeSession(delegate: nil)
let delegated = makeSession(delegate: PlainDelegate())
// Warm both up (the first evaluation loads the system's roots).
_ = try await measureRequests(plain, url, count: 5)
_ = try await measureRequests(delegated, url, count: 5)

var plainMedians: [Double] = []
var delegatedMedians: [Double] = []
for round in 0..<rounds {
    for variant in variantOrder(round: round) {
        let value = try await measureRequests(variant == 0 ? plain : delegated, url, count: requestsPerRound)
        if variant == 0 { plainMedians.append(value) } else { delegatedMedians.append(value) }
    }
}
plain.invalidateAndCancel()
delegated.invalidateAndCancel()
try await server.shutdown()

let chain = [SecCertificateCreateWithData(nil, Data(server.certificateDER))!]
var anchoredMedians: [Double] = []
var untrustedMedians: [Double] = []
for round in 0..<rounds {
    for variant in variantOrder(round: round) {
        let value = measureEvaluations(chain: chain, anchored: variant == 0, count: evaluationsPerRound)
        if variant == 0 { anchoredMedians.append(value) } else { untrustedMedians.append(value) }
    }
}

print("## Server trust (trust-bench)")
print()
print("Command: `swift run -c release --package-path Benchmarks trust-bench \(rounds)`; \(rounds) rounds, medians.")
print()
print("| 64 B GET over HTTPS, a new connection each (sequential) | p50 µs |")
print("| --- | --- |")
print("| session without a delegate (NIOSSL verifies) | \(format(median(plainMedians))) |")
print("| session with a delegate (Courier evaluates the `SecTrust`) | \(format(median(delegatedMedians))) |")
print()
print("| `SecTrustEvaluateWithError`, the server's self-signed certificate | µs per evaluation |")
print("| --- | --- |")
print("| as the anchor (trusted) | \(format(median(anchoredMedians))) |")
print("| not trusted (the system's roots; the chain fails) | \(format(median(untrustedMedians))) |")
