import CourierHTTP
import Foundation
import NIOConcurrencyHelpers
import NIOCore

/// The buffer between a task's body and the `URLSession.AsyncBytes` that reads it.
///
/// The engine appends chunks; when more than ``highWatermark`` bytes wait unread, `append` answers `true` and
/// the engine pauses the transfer; once the reader brings the buffer under ``lowWatermark`` the transfer
/// continues. So a slow reader never makes memory grow.
final class AsyncBytesSource: Sendable {
    static let highWatermark = 512 * 1024
    static let lowWatermark = 128 * 1024

    private struct State {
        var chunks = CircularBuffer<Data>()
        var buffered = 0
        var response: URLResponse?
        var finished = false
        var error: (any Error)?
        var responseWaiter: CheckedContinuation<URLResponse, any Error>?
        var chunkWaiter: CheckedContinuation<Data?, any Error>?
        var pausedByUs = false
        weak var task: URLSessionTask?
    }

    private let state = NIOLockedValueBox(State())

    func attach(_ task: URLSessionTask) {
        state.withLockedValue { $0.task = task }
    }

    var task: URLSessionTask? { state.withLockedValue { $0.task } }

    // MARK: - Engine side

    /// Whether the buffer holds more than the reader took, so the transfer should wait.
    var isHoldingBack: Bool { state.withLockedValue { $0.pausedByUs } }

    func didReceive(response: URLResponse) {
        let waiter: CheckedContinuation<URLResponse, any Error>? = state.withLockedValue { state in
            state.response = response
            defer { state.responseWaiter = nil }
            return state.responseWaiter
        }
        waiter?.resume(returning: response)
    }

    /// Adds a chunk; `true` when the engine should pause.
    func append(_ data: Data) -> Bool {
        let result: (CheckedContinuation<Data?, any Error>?, Bool) = state.withLockedValue { state in
            if let waiter = state.chunkWaiter {
                state.chunkWaiter = nil
                return (waiter, false)
            }
            state.chunks.append(data)
            state.buffered += data.count
            if state.buffered > Self.highWatermark && !state.pausedByUs {
                state.pausedByUs = true
                return (nil, true)
            }
            return (nil, false)
        }
        result.0?.resume(returning: data)
        return result.1
    }

    func finish(error: (any Error)?) {
        let waiters: (CheckedContinuation<URLResponse, any Error>?, CheckedContinuation<Data?, any Error>?) =
            state.withLockedValue { state in
                state.finished = true
                state.error = error
                defer {
                    state.responseWaiter = nil
                    state.chunkWaiter = nil
                }
                return (state.responseWaiter, state.chunkWaiter)
            }
        if let responseWaiter = waiters.0 {
            responseWaiter.resume(throwing: error ?? URLError(.badServerResponse))
        }
        if let chunkWaiter = waiters.1 {
            if let error { chunkWaiter.resume(throwing: error) } else { chunkWaiter.resume(returning: nil) }
        }
    }

    // MARK: - Reader side

    /// Waits for the response head.
    func response() async throws -> URLResponse {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<URLResponse, any Error>) in
                let immediate: Result<URLResponse, any Error>? = state.withLockedValue { state in
                    if let response = state.response { return .success(response) }
                    if state.finished { return .failure(state.error ?? URLError(.badServerResponse)) }
                    state.responseWaiter = continuation
                    return nil
                }
                if let immediate { continuation.resume(with: immediate) }
            }
        } onCancel: {
            self.task?.cancel()
        }
    }

    /// The next chunk, or `nil` at the end of the body.
    func next() async throws -> Data? {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Data?, any Error>) in
                enum Outcome {
                    case chunk(Data)
                    case end((any Error)?)
                    case wait
                }
                let (outcome, resume): (Outcome, Bool) = state.withLockedValue { state in
                    let outcome: Outcome
                    if let chunk = state.chunks.popFirst() {
                        state.buffered -= chunk.count
                        outcome = .chunk(chunk)
                    } else if state.finished {
                        outcome = .end(state.error)
                    } else {
                        state.chunkWaiter = continuation
                        outcome = .wait
                    }
                    // The reader caught up: let the transfer continue.
                    let resume = state.pausedByUs && state.buffered < Self.lowWatermark
                    if resume { state.pausedByUs = false }
                    return (outcome, resume)
                }
                if resume { resumeEngine() }
                switch outcome {
                case .chunk(let data): continuation.resume(returning: data)
                case .end(let error?): continuation.resume(throwing: error)
                case .end(nil): continuation.resume(returning: nil)
                case .wait: break
                }
            }
        } onCancel: {
            self.task?.cancel()
        }
    }

    private func resumeEngine() {
        task?.mutable.withLock { $0.engine }?.backpressureChanged()
    }
}
