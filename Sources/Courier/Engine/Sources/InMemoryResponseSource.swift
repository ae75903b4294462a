import CourierHTTP
import CourierTransport
import Foundation
import NIOCore

/// A response held in memory as a response source — a cached response, or a `data:` URL's: the head, then the
/// body, then the end, through the same consumer events as the network, so every delivery mode works for it.
///
/// The body is already in memory; it is handed over in parts of at most ``partSize`` bytes, each once the engine
/// handled the previous one, and not while the engine has the source paused. The engine's executor only queues what
/// it is handed while it runs a job (this source's calls come in one), and a `pause()` arrives as a later job: parts
/// handed over in a loop would all be queued, copied, before any pause could stop them.
final class InMemoryResponseSource: ResponseSource, @unchecked Sendable {
    static let partSize = 64 * 1024

    let origin: TransactionRecord.Origin
    private let response: URLResponse
    private let body: Data
    // Touched on the engine's executor only (start, pause, resume, cancel), as every source's calls are.
    private var consumer: (any ResponseSourceConsumer)?
    private var offset = 0
    private var paused = false
    private var ended = false
    /// Whether a part was handed over and the next waits until the engine handled it.
    private var awaitingHandling = false

    init(response: URLResponse, body: Data, origin: TransactionRecord.Origin) {
        self.response = response
        self.body = body
        self.origin = origin
    }

    /// A cached response.
    convenience init(_ cached: CachedURLResponse) {
        self.init(response: cached.response, body: cached.data, origin: .cache)
    }

    func start(_ consumer: any ResponseSourceConsumer) {
        self.consumer = consumer
        consumer.sourceDidReceive(response: response)
        deliver()
    }

    func pause() { paused = true }

    func resume() {
        paused = false
        deliver()
    }

    func cancel() {
        ended = true
        consumer = nil
    }

    func drain(then completion: @escaping @Sendable () -> Void) {
        ended = true
        consumer = nil
        completion()
    }

    private func deliver() {
        guard let consumer, !ended, !paused, !awaitingHandling else { return }
        guard offset < body.count else {
            ended = true
            self.consumer = nil
            consumer.sourceDidFinish()
            return
        }
        let end = min(offset + Self.partSize, body.count)
        consumer.sourceDidReceive(part: ByteBuffer(bytes: body[offset..<end]))
        offset = end
        // The next part once this one was handled, so that a pause it caused (a full `AsyncBytes` buffer, a slow
        // delegate queue) is seen first. The body runs on the engine's executor, as this source's calls do.
        awaitingHandling = true
        consumer.sourceAfterEventsHandled { [self] in
            awaitingHandling = false
            deliver()
        }
    }
}
