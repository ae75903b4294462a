import CourierHTTP
import CourierTransport
import Foundation
import NIOConcurrencyHelpers
import NIOCore

/// A task that speaks the WebSocket protocol (RFC 6455) over `ws://` or `wss://`.
///
/// The opening handshake runs like any request of the session — cookies, credentials and authentication
/// challenges, redirects, proxies, trust — on a connection of its own; when the server switches protocols the task
/// takes that connection over. Messages are received in order; sends are written in order; a receive or send made
/// before the connection opened waits for it. Only as many messages as the app has not yet received are read ahead
/// (up to 16): an app that stops receiving stops the reading, not its memory.
open class URLSessionWebSocketTask: URLSessionTask, @unchecked Sendable {
    /// A WebSocket message.
    public enum Message: Sendable {
        /// A binary message.
        case data(Data)
        /// A text message.
        case string(String)
    }

    /// The close codes of RFC 6455, and any other code as ``other(_:)``.
    ///
    /// Darwin's `CloseCode` is an imported C enumeration, which holds any raw value: `CloseCode(rawValue: 4000)`
    /// is not `nil` there, and a server's close with an application code (3000–4999) reports that code. A Swift
    /// enumeration holds only its cases, so the codes Darwin names none for are ``other(_:)``: `init(rawValue:)`
    /// never fails, `rawValue` gives the code back, and values compare by their code. (A `switch` that names
    /// Darwin's cases and ends with `@unknown default` is warned that it leaves out `.other`; it still compiles and
    /// the default handles the other codes.)
    public enum CloseCode: RawRepresentable, Hashable, Sendable {
        case invalid
        case normalClosure
        case goingAway
        case protocolError
        case unsupportedData
        case noStatusReceived
        case abnormalClosure
        case invalidFramePayloadData
        case policyViolation
        case messageTooBig
        case mandatoryExtensionMissing
        case internalServerError
        case tlsHandshakeFailure
        /// A code with no case of its own, such as an application's (3000–4999); never one of the named codes when
        /// made by ``init(rawValue:)``.
        case other(Int)

        private static let named: [CloseCode] = [
            .invalid, .normalClosure, .goingAway, .protocolError, .unsupportedData, .noStatusReceived,
            .abnormalClosure, .invalidFramePayloadData, .policyViolation, .messageTooBig, .mandatoryExtensionMissing,
            .internalServerError, .tlsHandshakeFailure,
        ]

        /// The code for `rawValue`: its named case, else ``other(_:)``. Never `nil` (the initializer is failable
        /// as Darwin's is, whose `CloseCode(rawValue: code)!` must compile).
        public init?(rawValue: Int) {
            self.init(code: rawValue)
        }

        /// The code for `code`: its named case, else ``other(_:)``.
        init(code: Int) {
            self = Self.named.first { $0.rawValue == code } ?? .other(code)
        }

        /// The code.
        public var rawValue: Int {
            switch self {
            case .invalid: 0
            case .normalClosure: 1000
            case .goingAway: 1001
            case .protocolError: 1002
            case .unsupportedData: 1003
            case .noStatusReceived: 1005
            case .abnormalClosure: 1006
            case .invalidFramePayloadData: 1007
            case .policyViolation: 1008
            case .messageTooBig: 1009
            case .mandatoryExtensionMissing: 1010
            case .internalServerError: 1011
            case .tlsHandshakeFailure: 1015
            case .other(let code): code
            }
        }

        /// Codes compare by value: `.other(1000)` is `.normalClosure`.
        public static func == (lhs: Self, rhs: Self) -> Bool { lhs.rawValue == rhs.rawValue }

        /// Hashes the code.
        public func hash(into hasher: inout Hasher) { hasher.combine(rawValue) }
    }

    /// How many received messages are held for an app that has not asked for them before reading stops.
    static let readAhead = 16

    /// The handshake and the slot the transport leaves the switched connection in.
    let upgrade: WebSocketUpgrade
    private let socket: NIOLockedValueBox<WebSocketTaskState>

    override init(session: URLSession, request: URLRequest, identifier: Int, completionMode: TaskCompletionMode) {
        let offered = WebSocketHandshake.offeredProtocols(
            in: request.value(forHTTPHeaderField: "Sec-WebSocket-Protocol").map { [$0] } ?? [])
        upgrade = WebSocketUpgrade(handshake: WebSocketHandshake(offeredProtocols: offered), slot: ConnectionUpgrade())
        socket = NIOLockedValueBox(WebSocketTaskState())
        super.init(session: session, request: request, identifier: identifier, completionMode: completionMode)
    }

    /// The request the engine runs for the handshake: `ws` and `wss` become `http` and `https`, and a body the
    /// app's request carries is left out (the handshake is a `GET` without one, RFC 6455 §4.1; sent, it would fail
    /// the task as any `GET` with a body does).
    static func handshakeRequest(for request: URLRequest) -> URLRequest {
        var mapped = request
        // Setting `httpBody` clears the stream too; a request without a body keeps its shared storage.
        if mapped.httpBody != nil || mapped.httpBodyStream != nil { mapped.httpBody = nil }
        guard let url = request.url, var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
            return mapped
        }
        switch components.scheme?.lowercased() {
        case "ws": components.scheme = "http"
        case "wss": components.scheme = "https"
        default: return mapped
        }
        mapped.url = components.url
        return mapped
    }

    /// The largest message accepted, in bytes (Darwin's default is 1 MiB). A larger one ends the task with close
    /// code 1009. Set it before `resume()`. Zero or less sets no limit, as a maximum message size of 0 does in the
    /// Network framework Darwin's WebSocket tasks run on.
    open var maximumMessageSize: Int {
        get { socket.withLockedValue { $0.maximumMessageSize } }
        set { socket.withLockedValue { $0.maximumMessageSize = newValue } }
    }

    /// How long the server has to answer the task's close frame before the connection is left (5 s; Darwin
    /// documents no figure). Read when the connection opens. Not public: tests set it so that what they check
    /// does not race the timeout on a loaded machine.
    package var closeHandshakeTimeout: Duration {
        get { socket.withLockedValue { $0.closeHandshakeTimeout } }
        set { socket.withLockedValue { $0.closeHandshakeTimeout = newValue } }
    }

    /// How long the server's close waits for the next receive of an app that has every message before it (1 s; see
    /// `WebSocketTaskState.closed`): a receive loop asks again as soon as it is done with its message, and an app
    /// without one still hears of the close. Not public: tests set it so that what they check does not race it on a
    /// loaded machine.
    package var heldCloseGrace: Duration {
        get { socket.withLockedValue { $0.heldCloseGrace } }
        set { socket.withLockedValue { $0.heldCloseGrace = newValue } }
    }

    /// The close code sent or received; `.invalid` while open.
    open var closeCode: CloseCode { socket.withLockedValue { $0.closeCode } }

    /// The close reason sent or received.
    open var closeReason: Data? { socket.withLockedValue { $0.closeReason } }

    // MARK: - Sending and receiving

    /// Sends a message; `completionHandler` runs on the delegate queue once it was written, or with the error that
    /// stopped it.
    open func send(_ message: Message, completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        let session = self.session
        let done: @Sendable (TransferError?) -> Void = { error in
            session.dispatcher.async { completionHandler(error.map(Self.socketError)) }
        }
        let outgoing = Self.transportMessage(message)
        switch socket.withLockedValue({ $0.send(outgoing, done) }) {
        case .send(let connection): connection.send(outgoing, completion: done)
        case .fail(let error): session.dispatcher.async { completionHandler(error) }
        case .queued: break
        }
    }

    /// Sends a message.
    open func send(_ message: Message) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            send(message) { error in
                if let error { continuation.resume(throwing: error) } else { continuation.resume() }
            }
        }
    }

    /// Receives the next message; `completionHandler` runs on the delegate queue.
    open func receive(completionHandler: @escaping @Sendable (Result<Message, any Error>) -> Void) {
        let session = self.session
        let action = socket.withLockedValue { $0.receive(completionHandler) }
        switch action.delivery {
        case .message(let message): session.dispatcher.async { completionHandler(.success(message)) }
        case .failure(let error): session.dispatcher.async { completionHandler(.failure(error)) }
        case .waits: break
        }
        if let change = action.reading { change.connection.setReading(change.on, generation: change.generation) }
        // This receive read the held close (see WebSocketTaskState.closed): it is told after the receive's result.
        if let close = action.close { end(telling: close) }
        if let grace = action.grace { tellHeldClose(after: grace) }
    }

    /// Receives the next message.
    open func receive() async throws -> Message {
        try await withCheckedThrowingContinuation { continuation in
            receive { continuation.resume(with: $0) }
        }
    }

    /// Sends a ping and returns when the pong arrives.
    open func sendPing() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            sendPing { error in
                if let error { continuation.resume(throwing: error) } else { continuation.resume() }
            }
        }
    }

    /// Sends a ping; the handler runs on the delegate queue when the pong arrives, or with the error that ended
    /// the connection first.
    open func sendPing(pongReceiveHandler: @escaping @Sendable ((any Error)?) -> Void) {
        let session = self.session
        let done: @Sendable (TransferError?) -> Void = { error in
            session.dispatcher.async { pongReceiveHandler(error.map(Self.socketError)) }
        }
        switch socket.withLockedValue({ $0.ping(done) }) {
        case .send(let connection): connection.sendPing(completion: done)
        case .fail(let error): session.dispatcher.async { pongReceiveHandler(error) }
        case .queued: break
        }
    }

    // MARK: - Lifecycle

    /// Starts the opening handshake; sends, receives and pings made before wait for the connection.
    open override func resume() {
        super.resume()
    }

    /// The error the task completed with: `nil` before it completed and after a clean close handshake; the
    /// handshake's failure, `URLError(.cancelled)` after ``cancel()``, or the connection's failure otherwise.
    open override var error: (any Error)? { super.error }

    // MARK: - Closing

    /// Closes the WebSocket with a close handshake: `closeCode` and `reason` go to the server, and the task
    /// completes (without an error) once the server answered, or after 5 s. Before the connection opened, the
    /// handshake is cancelled: no close frame goes out, and ``closeCode`` stays `.invalid`.
    open func cancel(with closeCode: CloseCode, reason: Data?) {
        let (connection, heldClose) = socket.withLockedValue { state in
            let connection = state.closeAsked(code: closeCode, reason: reason)
            return (connection, connection == nil ? state.takeHeldClose() : nil)
        }
        if let heldClose {
            // The server's clean close came first and waits for the app: the close the app asks for has happened.
            end(telling: heldClose)
            return
        }
        guard let connection else {
            cancelHandshakeOrConnection()
            return
        }
        // A code no close frame can carry (outside 0...65535) goes out as a close without a code, as 0 and the
        // other codes an endpoint may not send do.
        connection.close(code: UInt16(exactly: closeCode.rawValue) ?? 0, reason: Array(reason ?? Data()))
    }

    /// Cancels the task: an open connection is closed at once, without a close handshake, and the task completes
    /// with `URLError(.cancelled)`. As for every task, `state` is `canceling` from this call until the completion
    /// (and the session no longer lists the task).
    open override func cancel() {
        cancelHandshakeOrConnection()
    }

    /// Cancels the handshake, or closes the open connection without a close handshake.
    ///
    /// The lifecycle moves to `canceling` first, and only then is the connection looked up: ``open(_:protocol:)``
    /// records the connection first and looks at the lifecycle after, so whichever of the two runs second sees the
    /// other, and a connection that opens as the task is cancelled is closed. (Looking the connection up first, a
    /// cancel that found none while the handshake's end was opening one cancelled an engine that had finished, and
    /// the open had already seen the task running: the task stayed `canceling` until the server closed.)
    private func cancelHandshakeOrConnection() {
        let action = mutable.withLock { $0.lifecycle.cancel() }
        let (connection, heldClose) = socket.withLockedValue { ($0.openConnection, $0.takeHeldClose()) }
        if heldClose != nil {
            // The connection is gone, its close held for a receive to read: the task ends now, cancelled, and the
            // close is not told.
            finish(with: URLErrorMapping.urlError(.cancelled, failingURL: originalRequest?.url))
            return
        }
        guard let connection else {
            carryOutCancel(action)
            return
        }
        // Only the first cancel closes the connection.
        guard action == .cancelTransfer else { return }
        connection.abort(.cancelled())
    }

    // MARK: - The handshake's end

    /// The engine finished the handshake. Without an error the server answered; if it switched protocols and its
    /// answer passes RFC 6455's checks, the connection opens and the task goes on; otherwise the task fails with
    /// `badServerResponse`.
    override func complete(with error: (any Error)?, body: Data?, file: URL? = nil) {
        releaseHandshakeEngine()
        let upgraded = upgrade.slot.take()
        if let error {
            upgraded?.close()
            // The engine can end (a `cancel()`, a timeout) while the event loop is still handing the connection over
            // after the server's `101`: what arrives in the slot after this look is closed too.
            upgrade.slot.closeWhatIsLeft()
            handshakeFailed(
                error as? URLError
                    ?? URLError(.unknown, userInfo: [NSLocalizedDescriptionKey: String(describing: error)]))
            return
        }
        let response = self.response as? HTTPURLResponse
        let chosen: String
        do {
            guard let response else { throw TransferError.badServerResponse("the WebSocket handshake got no answer") }
            chosen = try upgrade.handshake.validate(status: response.statusCode) {
                response.value(forHTTPHeaderField: $0)
            }
            guard upgraded != nil else {
                throw TransferError.badServerResponse("the server did not switch the connection to WebSocket")
            }
        } catch {
            upgraded?.close()
            handshakeFailed(URLErrorMapping.urlError(from: error, failingURL: originalRequest?.url))
            return
        }
        guard let upgraded else { return }
        open(upgraded, protocol: chosen)
    }

    /// Lets go of the handshake's engine and its adapter, which the task otherwise kept until the connection closed
    /// (`URLSessionTask.complete` drops them): an open WebSocket can live for hours, and the engine (which holds the
    /// task back, a cycle) keeps its request, transactions and stage state. Nothing needs them once the handshake
    /// ended: its response, current request and counters are the task's already, its metrics were delivered before
    /// its end, and a `cancel()` or `suspend()` now finds no engine, as it would find one that had finished (a cancel
    /// is carried out on the connection, see `open(_:protocol:)`). They are dropped after the lock is released.
    private func releaseHandshakeEngine() {
        let handshake = mutable.withLock { state in
            defer {
                state.engine = nil
                state.adapter = nil
            }
            return (state.engine, state.adapter)
        }
        withExtendedLifetime(handshake) {}
    }

    private func open(_ upgraded: UpgradedConnection, protocol chosen: String) {
        // The delegate hears of the open first: once started, the connection may report its end at once from its
        // event loop (a server that hung up right after its 101), and that must come after `didOpenWithProtocol`.
        TaskEventAdapter.webSocketOpened(self, protocol: chosen.isEmpty ? nil : chosen)
        let bridge = WebSocketTaskBridge(task: self)
        // No limit for zero or less (see `maximumMessageSize`): taken literally, a negative limit refused every
        // message, even an empty one, and 0 every message but an empty one.
        let size = maximumMessageSize > 0 ? maximumMessageSize : Int.max
        let connection = WebSocketConnection.start(
            upgraded, maximumMessageSize: size, closeTimeout: .init(closeHandshakeTimeout), delegate: bridge)
        let opened = socket.withLockedValue { $0.opened(connection) }
        for (message, done) in opened.sends { connection.send(message, completion: done) }
        for done in opened.pings { connection.sendPing(completion: done) }
        connection.setReading(opened.reading.on, generation: opened.reading.generation)
        // A cancel() made after the handshake's end but before the connection was the task's found nothing to close
        // (the handshake's engine had finished): it is carried out now. The connection is recorded above before the
        // lifecycle is read here, the reverse of `cancelHandshakeOrConnection()`'s order, so one of the two closes it.
        if state == .canceling { connection.abort(.cancelled()) }
    }

    /// A message arrived (on the connection's event loop).
    func received(_ message: WebSocketMessage) {
        let converted = Self.taskMessage(message)
        let action = socket.withLockedValue { $0.received(converted) }
        if let receiver = action.receiver {
            session.dispatcher.async { receiver(.success(converted)) }
        }
        if let stop = action.stopReading { stop.connection.setReading(false, generation: stop.generation) }
    }

    /// The handshake failed: what waited for the connection fails with the task's error.
    private func handshakeFailed(_ error: URLError) {
        let waiting = socket.withLockedValue {
            $0.closed(
                WebSocketClosure(code: nil, reason: [], error: .urlError(error.code, error.localizedDescription)),
                receiveError: error)
        }
        fail(waiting, receiveError: error, sendError: .urlError(error.code, error.localizedDescription))
        finish(with: error)
    }

    private func fail(
        _ waiting: WebSocketTaskState.Waiting, receiveError: any Error, sendError: TransferError
    ) {
        let session = self.session
        for receiver in waiting.receivers { session.dispatcher.async { receiver(.failure(receiveError)) } }
        for (_, done) in waiting.sends { done(sendError) }
        for done in waiting.pings { done(sendError) }
    }

    /// The connection ended (on its event loop).
    func closed(_ closure: WebSocketClosure) {
        let taskError: URLError? = closure.error.map {
            URLErrorMapping.urlError(from: $0, failingURL: originalRequest?.url)
        }
        let receiveError: any Error = Self.socketError(closure.error)
        let waiting = socket.withLockedValue { $0.closed(closure, receiveError: receiveError) }
        fail(waiting, receiveError: receiveError, sendError: closure.error ?? WebSocketConnection.notConnected)
        switch waiting.ending {
        case .now(let close?): end(telling: close)
        case .now(nil): finish(with: taskError)
        case .whenAReceiveReadsTheClose(let orAfter):
            // The receive that reads the close ends the task; an app that had no message waiting and asks for none
            // is told after `orAfter`, rather than never.
            if let orAfter { tellHeldClose(after: orAfter) }
        }
    }

    /// Tells the held close after `delay`, unless a receive or a cancel took it by then. The shared deadline
    /// scheduler runs it on its event loop, as the connection's end is told from the connection's: telling it only
    /// dispatches the delegate's call to the delegate queue.
    private func tellHeldClose(after delay: Duration) {
        _ = DeadlineScheduler.shared.schedule(at: .now() + TimeAmount(delay)) { [weak self] in
            guard let self, let close = self.socket.withLockedValue({ $0.takeHeldClose() }) else { return }
            self.end(telling: close)
        }
    }

    /// Tells the delegate of the server's clean close and completes the task without an error.
    private func end(telling close: WebSocketTaskState.HeldClose) {
        TaskEventAdapter.webSocketClosed(self, code: close.code, reason: close.reason)
        finish(with: nil)
    }

    private func finish(with error: URLError?) {
        super.complete(with: error, body: nil)
    }

    // MARK: - Conversions

    private static func transportMessage(_ message: Message) -> WebSocketMessage {
        switch message {
        case .string(let text): return .text(text)
        case .data(let data): return .binary(ByteBuffer(bytes: data))
        }
    }

    private static func taskMessage(_ message: WebSocketMessage) -> Message {
        switch message {
        case .text(let text): return .string(text)
        case .binary(var bytes): return .data(Data(bytes.readBytes(length: bytes.readableBytes) ?? []))
        }
    }

    /// The error a send, receive or ping reports once the connection is gone: Darwin's `ENOTCONN` ("Socket is not
    /// connected") after a close — and for a send or a ping once a close handshake began, when no data frame may go
    /// out any more (``WebSocketConnection/notConnected``) — `EMSGSIZE` after a message over the limit, else the
    /// failure as a `URLError`.
    static func socketError(_ error: TransferError?) -> any Error {
        guard let error, error != WebSocketConnection.notConnected else { return POSIXError(.ENOTCONN) }
        if error.urlErrorCode == .dataLengthExceedsMaximum { return POSIXError(.EMSGSIZE) }
        return URLErrorMapping.urlError(from: error, failingURL: nil)
    }
}

/// Receives a WebSocket connection's events for its task; a separate object, so that the task does not publish a
/// transport protocol.
private final class WebSocketTaskBridge: WebSocketConnectionDelegate, @unchecked Sendable {
    weak var task: URLSessionWebSocketTask?

    init(task: URLSessionWebSocketTask) {
        self.task = task
    }

    func webSocketDidReceive(_ message: WebSocketMessage) {
        task?.received(message)
    }

    func webSocketDidClose(_ closure: WebSocketClosure) {
        task?.closed(closure)
    }
}
