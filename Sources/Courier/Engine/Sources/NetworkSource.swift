import CourierHTTP
import CourierTransport
import Foundation
import NIOCore

/// The network as a response source: runs one ``TransportRequest`` on the session's ``Transport`` and turns the
/// transport's response head into an `HTTPURLResponse`.
///
/// `@unchecked Sendable`: like every ``ResponseSource`` it is called on its engine's executor only (one call at a
/// time), so the exchange handle needs no lock.
final class NetworkSource: ResponseSource, @unchecked Sendable {
    /// Bytes of an unread body a follow-up request drains to keep the connection; beyond, it is closed.
    static let drainLimit = 64 * 1024

    let request: TransportRequest
    var origin: TransactionRecord.Origin { .network }
    private let transport: any Transport
    private var exchange: (any ExchangeHandle)?

    init(request: TransportRequest, transport: any Transport) {
        self.request = request
        self.transport = transport
    }

    func start(_ consumer: any ResponseSourceConsumer) {
        exchange = transport.execute(request, consumer: Consumer(consumer: consumer, url: request.url))
    }

    func pause() { exchange?.pause() }
    func resume() { exchange?.resume() }
    func cancel() { exchange?.cancel() }

    func drain(then completion: @escaping @Sendable () -> Void) {
        guard let handle = exchange else { return completion() }
        handle.drain(limit: Self.drainLimit, then: completion)
    }

    /// Adapts the transport's consumer protocol to the source's.
    private final class Consumer: TransportResponseConsumer {
        let consumer: any ResponseSourceConsumer
        let url: URL

        init(consumer: any ResponseSourceConsumer, url: URL) {
            self.consumer = consumer
            self.url = url
        }

        func transportDidSendBodyData(bytesSent: Int64, totalBytesSent: Int64) {
            consumer.sourceDidSendBodyData(bytesSent: bytesSent, totalBytesSent: totalBytesSent)
        }

        func transportDidReceiveHead(_ head: TransportResponseHead) {
            guard let response = ResponseBuilder.makeResponse(head: head, url: url) else {
                consumer.sourceDidFail(.badServerResponse("the status \(head.status) is not valid"))
                return
            }
            consumer.sourceDidReceive(response: response)
        }

        func transportDidReceiveInformationalHead(_ head: TransportResponseHead) {
            // An informational head the app cannot be shown (an invalid status) is dropped, not fatal: the final
            // response decides.
            guard let response = ResponseBuilder.makeResponse(head: head, url: url) else { return }
            consumer.sourceDidReceiveInformational(response)
        }

        func transportIsWaitingForConnectivity() { consumer.sourceIsWaitingForConnectivity() }
        func transportDidReceiveBodyPart(_ part: ByteBuffer) { consumer.sourceDidReceive(part: part) }
        func transportDidFinish() { consumer.sourceDidFinish() }
        func transportDidFail(_ error: TransferError) { consumer.sourceDidFail(error) }
        func transportDidCollect(_ timeline: TransportTimeline) { consumer.sourceDidCollect(timeline) }
    }
}
