import Courier
import CourierMockServer
import Foundation
import NIOConcurrencyHelpers
import Testing

/// Starts a raw TCP mock server for the duration of `body`.
func withTCPServer<T>(
    _ mode: MockTCPServer.Mode = .echo,
    startTLSCommand: String? = nil,
    tlsIdentity: MockTLSIdentity? = nil,
    _ body: (MockTCPServer) async throws -> T
) async throws -> T {
    let server = MockTCPServer(mode: mode, startTLSCommand: startTLSCommand, tlsIdentity: tlsIdentity)
    try await server.start()
    do {
        let result = try await body(server)
        await server.shutdown()
        return result
    } catch {
        await server.shutdown()
        throw error
    }
}

/// A stream task delegate that records its calls in order, and whether each ran on the expected queue.
final class StreamRecordingDelegate: NSObject, URLSessionStreamDelegate, @unchecked Sendable {
    enum Event: Equatable {
        case readClosed
        case writeClosed
        case becameStreams
        case complete(URLError.Code?)
    }

    private let state = NIOLockedValueBox<(events: [Event], offQueue: Int, streams: (InputStream, OutputStream)?)>(
        ([], 0, nil))
    let completed = AsyncGate()
    let becameStreams = AsyncGate()
    var expectedQueue: OperationQueue?

    var events: [Event] { state.withLockedValue { $0.events } }
    var callsOffQueue: Int { state.withLockedValue { $0.offQueue } }
    var streams: (InputStream, OutputStream)? { state.withLockedValue { $0.streams } }

    private func record(_ event: Event) {
        let onQueue = expectedQueue == nil || OperationQueue.current === expectedQueue
        state.withLockedValue { state in
            state.events.append(event)
            if !onQueue { state.offQueue += 1 }
        }
    }

    func urlSession(_ session: URLSession, readClosedFor streamTask: URLSessionStreamTask) {
        record(.readClosed)
    }

    func urlSession(_ session: URLSession, writeClosedFor streamTask: URLSessionStreamTask) {
        record(.writeClosed)
    }

    func urlSession(
        _ session: URLSession, streamTask: URLSessionStreamTask, didBecome inputStream: InputStream,
        outputStream: OutputStream
    ) {
        state.withLockedValue { $0.streams = (inputStream, outputStream) }
        record(.becameStreams)
        becameStreams.open()
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        record(.complete((error as? URLError)?.code))
        completed.open()
    }
}

/// A read's outcome through the completion-handler form.
struct StreamRead: @unchecked Sendable {
    var data: Data?
    var atEOF: Bool
    var error: (any Error)?
    var onDelegateQueue: Bool

    var text: String? { data.map { String(decoding: $0, as: UTF8.self) } }
    var urlErrorCode: URLError.Code? { (error as? URLError)?.code }
}

/// A write's outcome through the completion-handler form.
struct StreamWrite: @unchecked Sendable {
    var error: (any Error)?
    var onDelegateQueue: Bool

    var urlErrorCode: URLError.Code? { (error as? URLError)?.code }
}

extension URLSessionStreamTask {
    /// Reads through the completion-handler form; `then` gets the outcome.
    func read(
        min: Int, max: Int, timeout: TimeInterval = 30, queue: OperationQueue,
        then: @escaping @Sendable (StreamRead) -> Void
    ) {
        readData(ofMinLength: min, maxLength: max, timeout: timeout) { data, atEOF, error in
            then(StreamRead(data: data, atEOF: atEOF, error: error, onDelegateQueue: OperationQueue.current === queue))
        }
    }

    /// Reads through the completion-handler form.
    func read(min: Int, max: Int, timeout: TimeInterval = 30, queue: OperationQueue) async -> StreamRead {
        await withCheckedContinuation { continuation in
            read(min: min, max: max, timeout: timeout, queue: queue) { continuation.resume(returning: $0) }
        }
    }

    /// Makes a read through the completion-handler form now; its outcome is awaited later.
    func startRead(
        min: Int, max: Int, timeout: TimeInterval = 30, queue: OperationQueue
    ) -> PendingStreamCall<StreamRead> {
        let pending = PendingStreamCall<StreamRead>()
        read(min: min, max: max, timeout: timeout, queue: queue) { pending.fulfil($0) }
        return pending
    }

    /// Writes through the completion-handler form; `then` gets the outcome.
    func write(
        _ data: Data, timeout: TimeInterval = 30, queue: OperationQueue, then: @escaping @Sendable (StreamWrite) -> Void
    ) {
        write(data, timeout: timeout) { error in
            then(StreamWrite(error: error, onDelegateQueue: OperationQueue.current === queue))
        }
    }

    /// Writes `text` through the completion-handler form.
    func write(_ text: String, timeout: TimeInterval = 30, queue: OperationQueue) async -> StreamWrite {
        await write(Data(text.utf8), timeout: timeout, queue: queue)
    }

    func write(_ data: Data, timeout: TimeInterval = 30, queue: OperationQueue) async -> StreamWrite {
        await withCheckedContinuation { continuation in
            write(data, timeout: timeout, queue: queue) { continuation.resume(returning: $0) }
        }
    }

    /// Makes a write through the completion-handler form now; its outcome is awaited later.
    func startWrite(
        _ text: String, timeout: TimeInterval = 30, queue: OperationQueue
    ) -> PendingStreamCall<StreamWrite> {
        let pending = PendingStreamCall<StreamWrite>()
        write(Data(text.utf8), timeout: timeout, queue: queue) { pending.fulfil($0) }
        return pending
    }
}

/// The outcome of a call made at once and awaited later. Unlike an `async let`, whose child task may not have run yet
/// when the test goes on, the call has reached the task when `startRead` or `startWrite` returns: what the test does
/// next (`closeRead()`, `resume()`, `cancel()`) surely comes after it.
final class PendingStreamCall<Outcome: Sendable>: Sendable {
    private let gate = AsyncGate()
    private let outcome = NIOLockedValueBox<Outcome?>(nil)

    fileprivate func fulfil(_ value: Outcome) {
        outcome.withLockedValue { $0 = value }
        gate.open()
    }

    /// The outcome once the completion handler ran; `nil` (with an issue recorded) if it never did.
    var value: Outcome? {
        get async {
            await gate.wait()
            return outcome.withLockedValue { $0 }
        }
    }
}
