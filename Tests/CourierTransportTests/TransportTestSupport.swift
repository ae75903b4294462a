import CourierHTTP
import CourierTransport
import Foundation
import NIOConcurrencyHelpers
import NIOCore

/// Collects one exchange's events and lets a test await its end.
final class CollectingConsumer: TransportResponseConsumer {
    struct Outcome {
        var head: TransportResponseHead?
        var body = Data()
        var parts = 0
        var error: TransferError?
        var finished = false
    }

    private let state = NIOLockedValueBox<(outcome: Outcome, waiter: CheckedContinuation<Outcome, Never>?)>(
        (Outcome(), nil))

    var snapshot: Outcome { state.withLockedValue { $0.outcome } }

    func transportDidSendBodyData(bytesSent: Int64, totalBytesSent: Int64) {}

    func transportDidReceiveHead(_ head: TransportResponseHead) {
        state.withLockedValue { $0.outcome.head = head }
    }

    func transportDidReceiveBodyPart(_ part: ByteBuffer) {
        state.withLockedValue { state in
            state.outcome.body.append(contentsOf: part.readableBytesView)
            state.outcome.parts += 1
        }
    }

    func transportDidFinish() {
        end { $0.finished = true }
    }

    func transportDidFail(_ error: TransferError) {
        end { $0.error = error }
    }

    private func end(_ change: (inout Outcome) -> Void) {
        let (waiter, outcome) = state.withLockedValue { state in
            change(&state.outcome)
            defer { state.waiter = nil }
            return (state.waiter, state.outcome)
        }
        waiter?.resume(returning: outcome)
    }

    /// Waits for the exchange to finish or fail.
    func outcome() async -> Outcome {
        await withCheckedContinuation { continuation in
            let done: Outcome? = state.withLockedValue { state in
                if state.outcome.finished || state.outcome.error != nil { return state.outcome }
                state.waiter = continuation
                return nil
            }
            if let done { continuation.resume(returning: done) }
        }
    }
}

func makeRequest(
    _ url: URL,
    method: String = "GET",
    timeout: TimeAmount = .seconds(10),
    evaluator: (any ServerTrustEvaluator)? = nil
) throws -> TransportRequest {
    try TransportRequest(
        method: method,
        url: url,
        headers: [],
        body: .none,
        idleTimeout: timeout,
        tls: TLSSettings(),
        trustEvaluator: evaluator
    )
}
