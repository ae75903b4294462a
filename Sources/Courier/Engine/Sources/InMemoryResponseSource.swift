import CourierHTTP
import CourierTransport
import Foundation
import NIOCore

/// A response held in memory as a response source — a cached response, or a `data:` URL's: the head, then the
/// body, then the end, through the same consumer events as the network, so every delivery mode works for it.
///
/// The body is already in memory; it is handed over in parts of at most ``partSize`` bytes, each after the previous
/// one, and not while the engine has the source paused.
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
        guard let consumer, !ended else { return }
        while !paused, offset < body.count {
            let end = min(offset + Self.partSize, body.count)
            consumer.sourceDidReceive(part: ByteBuffer(bytes: body[offset..<end]))
            offset = end
        }
        if offset >= body.count, !paused {
            ended = true
            consumer.sourceDidFinish()
            self.consumer = nil
        }
    }
}
