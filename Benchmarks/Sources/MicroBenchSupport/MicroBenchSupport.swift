import Courier
import Foundation

// What the single-process benchmarks (`store-bench`, `trust-bench`) share: their rounds, medians and figures.

/// The number of rounds from the command line's first argument, `defaultRounds` without one.
public func roundsFromCommandLine(default defaultRounds: Int = 5) -> Int {
    CommandLine.arguments.dropFirst().first.flatMap(Int.init) ?? defaultRounds
}

/// The median of `values` (the upper one of an even count).
public func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted[sorted.count / 2]
}

/// A figure with one decimal, as the benchmarks print them.
public func format(_ value: Double) -> String { String(format: "%.1f", value) }

/// `duration` in microseconds.
public func microseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1e6 + Double(duration.components.attoseconds) / 1e12
}

/// The variants' order in `round`: alternated, so that neither always runs first on a warmer machine.
public func variantOrder(round: Int) -> [Int] {
    round % 2 == 0 ? [0, 1] : [1, 0]
}

/// The latencies in µs, sorted, of `count` sequential GETs of `request` through `session`; every body must be
/// `bytes` long.
public func sequentialLatencies(
    _ session: URLSession, _ request: URLRequest, count: Int, bytes: Int
) async throws -> [Double] {
    var latencies: [Double] = []
    latencies.reserveCapacity(count)
    for _ in 0..<count {
        let start = ContinuousClock.now
        let (data, _) = try await session.data(for: request)
        let elapsed = ContinuousClock.now - start
        precondition(data.count == bytes, "unexpected body")
        latencies.append(microseconds(elapsed))
    }
    return latencies.sorted()
}
