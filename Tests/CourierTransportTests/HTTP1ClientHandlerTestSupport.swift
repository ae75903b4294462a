import CourierHTTP
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

@testable import CourierTransport

/// The socket end of a test pipeline (its first handler): counts the reads that reach the socket and, like a
/// socket, hands bytes that ``arrive(_:)`` over only while a read is outstanding, reading on after each delivery
/// as `autoRead` does. Bytes written with `writeInbound` pass it untouched.
final class SocketEnd: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = IOData

    /// The reads that reached the socket.
    private(set) var reads = 0
    private var demand = false
    private var waiting: [ByteBuffer] = []
    private var delivering = false
    private var context: ChannelHandlerContext?

    /// Bytes that arrived but were not read yet.
    var unreadBytes: Int { waiting.reduce(0) { $0 + $1.readableBytes } }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func read(context: ChannelHandlerContext) {
        reads += 1
        demand = true
        context.read()
        deliver()
    }

    /// The server sent `bytes`: they are read when the pipeline asks for a read.
    func arrive(_ bytes: String) {
        waiting.append(ByteBuffer(string: bytes))
        deliver()
    }

    private func deliver() {
        guard !delivering, let context else { return }
        delivering = true
        defer { delivering = false }
        while demand, !waiting.isEmpty {
            demand = false
            context.fireChannelRead(wrapInboundOut(waiting.removeFirst()))
            context.fireChannelReadComplete()
            // autoRead: the channel asks for the next read; a paused handler holds it back.
            context.channel.read()
        }
    }
}

/// Records one exchange's events in order. Thread-safe: the async-testing loop calls it from its own queue.
final class RecordingConsumer: TransportResponseConsumer {
    enum Event: Equatable {
        case sent(Int64)
        case informational(Int)
        case head(Int)
        case body(String)
        case finished
        case failed(URLError.Code)
    }

    private struct State {
        var events: [Event] = []
        var heads: [TransportResponseHead] = []
        var informationalHeads: [TransportResponseHead] = []
        var error: TransferError?
        var timelines: [TransportTimeline] = []
        var onHead: (@Sendable () -> Void)?
        var onBodyPart: (@Sendable () -> Void)?
    }

    private let state = NIOLockedValueBox(State())

    /// Every event so far, in order.
    var events: [Event] { state.withLockedValue { $0.events } }
    /// The final heads delivered (at most one is allowed).
    var heads: [TransportResponseHead] { state.withLockedValue { $0.heads } }
    /// The informational heads delivered (1xx but 100 and 101).
    var informationalHeads: [TransportResponseHead] { state.withLockedValue { $0.informationalHeads } }
    /// The body parts delivered, joined.
    var body: String {
        events.reduce(into: "") { text, event in
            if case .body(let part) = event { text += part }
        }
    }
    /// The body parts delivered.
    var bodyParts: [String] {
        events.compactMap { event in
            if case .body(let part) = event { return part }
            return nil
        }
    }
    var finished: Bool { events.contains(.finished) }
    var error: TransferError? { state.withLockedValue { $0.error } }
    /// The timelines handed over before the end.
    var timelines: [TransportTimeline] { state.withLockedValue { $0.timelines } }

    /// Runs inside the head event (on the event loop), as an engine's consumer reacts.
    func onHead(_ action: @escaping @Sendable () -> Void) {
        state.withLockedValue { $0.onHead = action }
    }

    /// Runs inside every body event (on the event loop).
    func onBodyPart(_ action: @escaping @Sendable () -> Void) {
        state.withLockedValue { $0.onBodyPart = action }
    }

    func transportDidSendBodyData(bytesSent: Int64, totalBytesSent: Int64) {
        state.withLockedValue { $0.events.append(.sent(totalBytesSent)) }
    }

    func transportDidReceiveInformationalHead(_ head: TransportResponseHead) {
        state.withLockedValue { state in
            state.events.append(.informational(head.status))
            state.informationalHeads.append(head)
        }
    }

    func transportDidReceiveHead(_ head: TransportResponseHead) {
        let action = state.withLockedValue { state in
            state.events.append(.head(head.status))
            state.heads.append(head)
            return state.onHead
        }
        action?()
    }

    func transportDidReceiveBodyPart(_ part: ByteBuffer) {
        let action = state.withLockedValue { state in
            state.events.append(.body(String(buffer: part)))
            return state.onBodyPart
        }
        action?()
    }

    func transportDidFinish() {
        state.withLockedValue { $0.events.append(.finished) }
    }

    func transportDidFail(_ error: TransferError) {
        state.withLockedValue { state in
            state.events.append(.failed(error.urlErrorCode))
            state.error = error
        }
    }

    func transportDidCollect(_ timeline: TransportTimeline) {
        state.withLockedValue { $0.timelines.append(timeline) }
    }
}

/// A streamed request body served from memory, in the given chunks. ``closed`` yields when the writer closes the
/// reader, which it does once it is done with the body (after the last read, before it writes the request's end).
struct ChunkedSource: TransportBodySource {
    let chunks: [String]
    let closed: AsyncStream<Void>
    private let onClose: AsyncStream<Void>.Continuation

    init(chunks: [String]) {
        self.chunks = chunks
        (closed, onClose) = AsyncStream.makeStream()
    }

    func makeReader() async throws -> any TransportBodyReader {
        Reader(chunks: chunks, onClose: onClose)
    }

    private final class Reader: TransportBodyReader {
        private let remaining: NIOLockedValueBox<[String]>
        private let onClose: AsyncStream<Void>.Continuation

        init(chunks: [String], onClose: AsyncStream<Void>.Continuation) {
            remaining = NIOLockedValueBox(chunks)
            self.onClose = onClose
        }

        func read(maxLength: Int) async throws -> ByteBuffer? {
            remaining.withLockedValue { chunks in
                chunks.isEmpty ? nil : ByteBuffer(string: chunks.removeFirst())
            }
        }

        func close() {
            onClose.yield()
        }
    }
}

enum HTTP1TestPipeline {
    static let endpoint = Endpoint(scheme: .http, host: "example.test", port: 80)

    /// The handlers ``ConnectionFactory`` puts on a plain-HTTP connection, `client` last, after `socket`.
    static func add(
        to pipeline: ChannelPipeline.SynchronousOperations,
        socket: SocketEnd?,
        client: HTTP1ClientHandler
    ) throws {
        if let socket { try pipeline.addHandler(socket) }
        try pipeline.addHandler(ReadActivityHandler { [unowned client] in client.noteReadActivity() })
        try pipeline.addHandler(HTTP1ClientCodec(endpoint: endpoint))
        try pipeline.addHandler(client)
    }

    static func makeHandler(idleConnectionTimeout: TimeAmount = .seconds(60)) -> HTTP1ClientHandler {
        HTTP1ClientHandler(endpoint: endpoint, idleConnectionTimeout: idleConnectionTimeout, protocolName: "http/1.1")
    }

    /// A request to ``endpoint``.
    static func request(
        _ method: String = "GET",
        authority: String = "example.test",
        path: String = "/",
        headers: [(String, String)] = [],
        body: TransportRequestBody = .none,
        idleTimeout: TimeAmount = .seconds(30)
    ) throws -> TransportRequest {
        let url = try #require(URL(string: "http://\(authority)\(path)"))
        return try TransportRequest(
            method: method,
            url: url,
            headers: headers,
            body: body,
            idleTimeout: idleTimeout,
            tls: TLSSettings()
        )
    }

    /// A pool whose factory is never asked to connect: the tests lease connections themselves.
    static func makePool(group: any EventLoopGroup, deadlines: DeadlineScheduler = .shared) -> ConnectionPool {
        let factory = ConnectionFactory(
            group: group,
            tlsContexts: TLSContextCache(),
            idleConnectionTimeout: .seconds(60)
        )
        return ConnectionPool(
            factory: factory, maxConnectionsPerHost: 1, logger: Logger(label: "test"), deadlines: deadlines)
    }
}

/// An ``HTTP1ClientHandler`` on an `EmbeddedChannel` behind the real codec pipeline, wrapped in an
/// ``HTTP1Connection`` that exchanges are leased to, so that their `cancel`, `pause`, `resume` and `drain` reach
/// the handler as in production. Everything runs on the test's thread.
final class HTTP1Harness {
    let loop = EmbeddedEventLoop()
    let channel: EmbeddedChannel
    let socket = SocketEnd()
    let handler: HTTP1ClientHandler
    let pool: ConnectionPool
    let connection: HTTP1Connection
    /// How often the handler said the connection can take another request / that it closed.
    private(set) var reusableCount = 0
    private(set) var closedCount = 0

    init(idleConnectionTimeout: TimeAmount = .seconds(60)) throws {
        channel = EmbeddedChannel(loop: loop)
        handler = HTTP1TestPipeline.makeHandler(idleConnectionTimeout: idleConnectionTimeout)
        try HTTP1TestPipeline.add(to: channel.pipeline.syncOperations, socket: socket, client: handler)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 80)).wait()
        pool = HTTP1TestPipeline.makePool(group: loop)
        connection = HTTP1Connection(
            id: 1,
            key: PoolKey(request: try HTTP1TestPipeline.request()),
            channel: channel,
            handler: NIOLoopBound(handler, eventLoop: loop)
        )
        handler.onReusable = { [weak self] in self?.reusableCount += 1 }
        handler.onClosed = { [weak self] in self?.closedCount += 1 }
    }

    deinit {
        pool.shutdown()
        _ = try? channel.finish(acceptAlreadyClosed: true)
    }

    /// Leases the connection to a new exchange for `request` and runs it, as the pool does.
    func start(
        _ request: TransportRequest,
        consumer: RecordingConsumer,
        isReused: Bool = false
    ) throws -> TransportExchange {
        let exchange = TransportExchange(request: request, consumer: consumer, pool: pool)
        try #require(exchange.attach(connection))
        connection.execute(exchange, isReused: isReused)
        loop.run()
        return exchange
    }

    /// Everything the client wrote since the last call, as text.
    func sent() throws -> String {
        var text = ""
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) {
            text += String(buffer: buffer)
        }
        return text
    }

    /// The server sent `bytes` (read at once, as `writeInbound` does).
    func receive(_ bytes: String) throws {
        try channel.writeInbound(ByteBuffer(string: bytes))
        loop.run()
    }

    /// The server closed the connection. An `EmbeddedChannel` has no peer: closing it leads to the same
    /// `channelInactive` (after which the decoder sees the end of the input) that reading EOF leads to.
    func serverCloses() {
        channel.close(promise: nil)
        loop.run()
    }

    /// Closes the channel and fails on an error that reached the end of the pipeline. The pool is shut down first,
    /// so that an exchange the close fails as retryable is not given to the factory (it cannot connect here).
    func finish() throws {
        pool.shutdown()
        _ = try channel.finish(acceptAlreadyClosed: true)
    }
}

/// A request head as written: the request line and the fields in order.
struct SentHead {
    let requestLine: String
    let fields: [(name: String, value: String)]
    let body: String

    init(_ text: String) throws {
        let parts = text.components(separatedBy: "\r\n\r\n")
        let head = try #require(parts.first)
        body = parts.dropFirst().joined(separator: "\r\n\r\n")
        var lines = head.components(separatedBy: "\r\n")
        requestLine = lines.removeFirst()
        fields = try lines.map { line in
            let colon = try #require(line.firstIndex(of: ":"))
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
    }

    /// The values of the field `name`, in order.
    func values(_ name: String) -> [String] {
        fields.filter { $0.name.lowercased() == name.lowercased() }.map(\.value)
    }
}
