import Foundation

extension URLSessionStreamTask {
    /// Reads at least `minBytes` and at most `maxBytes` bytes (see
    /// ``readData(ofMinLength:maxLength:timeout:completionHandler:)``).
    ///
    /// - Returns: The bytes (`nil` when none were left at the end of input) and whether the end of input was reached.
    /// - Throws: `URLError` (`timedOut` when `timeout` ran out, `cancelled`…), or `POSIXError(.ENOTCONN)` after
    ///   ``closeRead()``.
    public func readData(ofMinLength minBytes: Int, maxLength maxBytes: Int, timeout: TimeInterval) async throws -> (
        Data?, Bool
    ) {
        let outcome: ReadOutcome = try await withCheckedThrowingContinuation { continuation in
            readData(ofMinLength: minBytes, maxLength: maxBytes, timeout: timeout) { data, atEOF, error in
                if let error {
                    continuation.resume(throwing: error)
                } else {
                    continuation.resume(returning: ReadOutcome(data: data, atEOF: atEOF))
                }
            }
        }
        return (outcome.data, outcome.atEOF)
    }

    /// Writes `data` (see ``write(_:timeout:completionHandler:)``) and returns once it went to the network.
    ///
    /// - Throws: `URLError` (`timedOut` when `timeout` ran out, `cancelled`…), or `POSIXError(.EPIPE)` after
    ///   ``closeWrite()``.
    public func write(_ data: Data, timeout: TimeInterval) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            write(data, timeout: timeout) { error in
                if let error {
                    continuation.resume(throwing: error)
                } else {
                    continuation.resume()
                }
            }
        }
    }
}

/// A read's result, sendable across the continuation.
private struct ReadOutcome: Sendable {
    var data: Data?
    var atEOF: Bool
}
