import CourierHTTP
import CourierTransport
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing

/// A transport without sockets, for engine tests: it records every request and hands the test a
/// ``FakeExchange`` to script the response with, and records what the engine asked of each exchange.
final class FakeTransport: Transport {
    private let state = NIOLockedValueBox<[FakeExchange]>([])
    /// Runs for each new exchange (on the engine's executor): a test may answer it at once.
    let onExchange: @Sendable (FakeExchange) -> Void

    init(onExchange: @escaping @Sendable (FakeExchange) -> Void = { _ in }) {
        self.onExchange = onExchange
    }

    var exchanges: [FakeExchange] { state.withLockedValue { $0 } }

    func execute(_ request: TransportRequest, consumer: any TransportResponseConsumer) -> any ExchangeHandle {
        let exchange = FakeExchange(request: request, consumer: consumer)
        state.withLockedValue { $0.append(exchange) }
        onExchange(exchange)
        return exchange
    }

    func shutdown() {}

    func closeIdleConnections() {}

    /// Waits (up to 30 seconds: the whole suite on two cores held eight of these tests past ten) until the
    /// transport has run `count` exchanges and returns the last one; a test whose task ended before reaching the
    /// transport fails here instead of hanging.
    func exchange(_ count: Int) async throws -> FakeExchange {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            let current = exchanges
            if current.count >= count { return current[count - 1] }
            try await Task.sleep(for: .milliseconds(2))
        }
        Issue.record("the task never started exchange \(count)")
        throw CancellationError()
    }
}

/// One scripted exchange: the test plays the server's part; the engine's calls are recorded.
final class FakeExchange: ExchangeHandle {
    enum Call: Equatable, Sendable {
        case pause, resume, cancel, drain
    }

    let request: TransportRequest
    private let consumer: any TransportResponseConsumer
    private let recorded = NIOLockedValueBox<[Call]>([])

    init(request: TransportRequest, consumer: any TransportResponseConsumer) {
        self.request = request
        self.consumer = consumer
    }

    /// What the engine asked of this exchange, in order.
    var calls: [Call] { recorded.withLockedValue { $0 } }
    /// Whether the last pause/resume call was a pause.
    var isPaused: Bool { calls.last { $0 == .pause || $0 == .resume } == .pause }

    func cancel(_ error: TransferError) {
        recorded.withLockedValue { $0.append(.cancel) }
        consumer.transportDidFail(error)
    }

    func pause() { recorded.withLockedValue { $0.append(.pause) } }
    func resume() { recorded.withLockedValue { $0.append(.resume) } }

    func drain(limit: Int, then completion: @escaping @Sendable () -> Void) {
        recorded.withLockedValue { $0.append(.drain) }
        completion()
    }

    // MARK: - The server's part

    func respond(_ status: Int, _ headers: [(String, String)] = []) {
        consumer.transportDidReceiveHead(
            TransportResponseHead(
                status: status,
                reason: "",
                version: "HTTP/1.1",
                headers: headers,
                connection: ConnectionInfo(isReused: false, protocolName: "http/1.1")
            )
        )
    }

    func send(_ text: String) {
        consumer.transportDidReceiveBodyPart(ByteBuffer(string: text))
    }

    func finish() {
        consumer.transportDidCollect(TransportTimeline())
        consumer.transportDidFinish()
    }

    func fail(_ error: TransferError) {
        consumer.transportDidFail(error)
    }

    /// Head, body and end at once.
    func answer(_ status: Int, _ body: String, headers: [(String, String)] = []) {
        respond(status, headers + [("Content-Length", "\(body.utf8.count)")])
        if !body.isEmpty { send(body) }
        finish()
    }
}

/// A transport request for tests that need one.
enum TransportRequestFixture {
    static func make(_ url: String = "http://example.test/") throws(TransferError) -> TransportRequest {
        try TransportRequest(
            method: "GET", url: URL(string: url)!, headers: [], body: .none, idleTimeout: .seconds(60),
            tls: TLSSettings())
    }
}
