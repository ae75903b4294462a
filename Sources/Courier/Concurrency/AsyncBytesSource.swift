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
        var error: URLError?
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

    func finish(error: URLError?) {
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
                let immediate: Result<URLResponse, URLError>? = state.withLockedValue { state in
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
                enum Immediate {
                    case chunk(Data, resume: Bool)
                    case end(URLError?)
                }
                let immediate: Immediate? = state.withLockedValue { state in
                    if let chunk = state.chunks.popFirst() {
                        state.buffered -= chunk.count
                        let resume = state.pausedByUs && state.buffered < Self.lowWatermark
                        if resume { state.pausedByUs = false }
                        return .chunk(chunk, resume: resume)
                    }
                    if state.finished { return .end(state.error) }
                    if state.pausedByUs {
                        state.pausedByUs = false
                        state.chunkWaiter = continuation
                        return .chunk(Data(), resume: true)
                    }
                    state.chunkWaiter = continuation
                    return nil
                }
                switch immediate {
                case .none:
                    break
                case .chunk(let data, let resume):
                    if resume { resumeEngine() }
                    if !data.isEmpty || !resume { continuation.resume(returning: data) }
                case .end(let error):
                    if let error { continuation.resume(throwing: error) } else { continuation.resume(returning: nil) }
                }
            }
        } onCancel: {
            self.task?.cancel()
        }
    }

    private func resumeEngine() {
        task?.mutable.withLockedValue { $0.runner }?.consumerDrained()
    }
}
