import CourierHTTP
import CourierTransport
import Foundation
import NIOCore

/// The bookkeeping of a WebSocket task, as a value stepped under the task's lock: what waits for the connection to
/// open, the receives waiting for messages and the messages waiting for receives, and whether the connection should
/// read. Each step returns what to do; the task does it after the lock is released.
struct WebSocketTaskState {
    typealias Done = @Sendable (TransferError?) -> Void
    typealias Receiver = @Sendable (Result<URLSessionWebSocketTask.Message, any Error>) -> Void

    enum Phase {
        case handshaking
        case open(WebSocketConnection)
        /// Closed: receives (once the held messages are taken), sends and pings fail with the error.
        case closed(any Error)
    }

    var phase = Phase.handshaking
    var maximumMessageSize = 1 << 20
    var closeHandshakeTimeout = Duration(WebSocketConnection.closeTimeout)
    /// See ``URLSessionWebSocketTask/heldCloseGrace``.
    var heldCloseGrace = Duration.seconds(1)
    var closeCode = URLSessionWebSocketTask.CloseCode.invalid
    var closeReason: Data?
    /// Whether the app asked for a close (`cancel(with:reason:)`): the first one's code and reason are recorded.
    private var closeWasAsked = false
    /// Sends and pings made before the connection opened, in order.
    private var queuedSends: [(WebSocketMessage, Done)] = []
    private var queuedPings: [Done] = []
    private var receivers: [Receiver] = []
    private var messages: [URLSessionWebSocketTask.Message] = []
    /// The server's clean close, held until a receive reads it (see ``closed(_:receiveError:)``).
    private var heldClose: HeldClose?
    /// Whether the app has received a message: an app with a receive loop reads the server's close with its next
    /// receive, one that never receives is told of it at once.
    private var hasReceived = false

    /// A clean close to tell the app (`didCloseWith`, then the task's completion without an error).
    struct HeldClose {
        var code: URLSessionWebSocketTask.CloseCode
        var reason: Data?
    }
    /// Numbers each reading decision: the task carries them out after the lock is released, from the event loop
    /// (a message arrived) or the app's thread (a receive), so they may reach the connection in either order; the
    /// connection keeps only the newest.
    private var readingGeneration = 0

    /// A decision to read or not, numbered.
    struct ReadingChange {
        var connection: WebSocketConnection
        var on: Bool
        var generation: Int
    }

    private mutating func reading(_ on: Bool, on connection: WebSocketConnection?) -> ReadingChange? {
        guard let connection else { return nil }
        readingGeneration += 1
        return ReadingChange(connection: connection, on: on, generation: readingGeneration)
    }

    var openConnection: WebSocketConnection? {
        if case .open(let connection) = phase { return connection }
        return nil
    }

    /// `cancel(with:reason:)`: records `code` and `reason` — those of the first close asked for, and only while the
    /// connection is open: after it ended they are the close that happened, and a later call closes nothing; before
    /// it opened the handshake is cancelled and no close frame goes out, so `closeCode` stays `.invalid`, as on
    /// Darwin when no close happened — and hands back the open connection to close, if there is one.
    mutating func closeAsked(code: URLSessionWebSocketTask.CloseCode, reason: Data?) -> WebSocketConnection? {
        guard case .open(let connection) = phase else { return nil }
        if !closeWasAsked {
            closeWasAsked = true
            // `.other(1000)` is recorded as `.normalClosure`, which a `switch` matches.
            closeCode = URLSessionWebSocketTask.CloseCode(code: code.rawValue)
            closeReason = reason
        }
        return connection
    }

    enum Outgoing {
        case send(WebSocketConnection)
        case queued
        /// Fails with the error as the app sees it.
        case fail(any Error)
    }

    mutating func send(_ message: WebSocketMessage, _ done: @escaping Done) -> Outgoing {
        switch phase {
        case .handshaking:
            queuedSends.append((message, done))
            return .queued
        case .open(let connection):
            return .send(connection)
        case .closed(let error):
            return .fail(error)
        }
    }

    mutating func ping(_ done: @escaping Done) -> Outgoing {
        switch phase {
        case .handshaking:
            queuedPings.append(done)
            return .queued
        case .open(let connection):
            return .send(connection)
        case .closed(let error):
            return .fail(error)
        }
    }

    enum Delivery {
        case message(URLSessionWebSocketTask.Message)
        case failure(any Error)
        case waits
    }

    /// A receive: a message already held, the error of a closed connection, or a wait. Taking a held message may
    /// let the connection read again. A held close is handed over to tell after the receive: the server's by the
    /// receive that finds no message left (it reads the close frame, as on Darwin), one the app asked for by the
    /// receive that takes the last message.
    ///
    /// Taking the last message before a held close the server began starts that close's `grace`: the app now has
    /// every message, and if it asks for no more it still hears of the close.
    mutating func receive(_ receiver: @escaping Receiver) -> (
        delivery: Delivery, reading: ReadingChange?, close: HeldClose?, grace: Duration?
    ) {
        if !messages.isEmpty {
            hasReceived = true
            let message = messages.removeFirst()
            let resumes = messages.count == URLSessionWebSocketTask.readAhead - 1
            var close: HeldClose?
            var grace: Duration?
            // A close the server began waits for a receive that finds no message left; one the app asked for, for
            // the receive that takes the last message.
            if messages.isEmpty, heldClose != nil {
                if closeWasAsked { close = takeHeldClose() } else { grace = heldCloseGrace }
            }
            return (.message(message), resumes ? reading(true, on: openConnection) : nil, close, grace)
        }
        if case .closed(let error) = phase { return (.failure(error), nil, takeHeldClose(), nil) }
        receivers.append(receiver)
        return (.waits, nil, nil, nil)
    }

    /// The held close, if any, which is then no longer held: a `cancel()` ends the task instead of it.
    mutating func takeHeldClose() -> HeldClose? {
        defer { heldClose = nil }
        return heldClose
    }

    /// The connection opened: what waited goes out, and it reads.
    mutating func opened(_ connection: WebSocketConnection) -> (
        sends: [(WebSocketMessage, Done)], pings: [Done], reading: ReadingChange
    ) {
        // The connection may have ended before this (the server hung up right after its 101, and the connection
        // reported it from its event loop first): a closed task stays closed.
        if case .closed = phase {
            return ([], [], ReadingChange(connection: connection, on: false, generation: readingGeneration))
        }
        phase = .open(connection)
        defer {
            queuedSends = []
            queuedPings = []
        }
        readingGeneration += 1
        return (
            queuedSends, queuedPings,
            ReadingChange(
                connection: connection, on: messages.count < URLSessionWebSocketTask.readAhead,
                generation: readingGeneration)
        )
    }

    /// A message arrived: to the first waiting receive, else held; with enough held, reading stops.
    mutating func received(_ message: URLSessionWebSocketTask.Message) -> (
        receiver: Receiver?, stopReading: ReadingChange?
    ) {
        if !receivers.isEmpty {
            hasReceived = true
            return (receivers.removeFirst(), nil)
        }
        messages.append(message)
        return (nil, messages.count >= URLSessionWebSocketTask.readAhead ? reading(false, on: openConnection) : nil)
    }

    /// What was still waiting when the connection ended (or never opened).
    struct Waiting {
        var receivers: [Receiver]
        var sends: [(WebSocketMessage, Done)]
        var pings: [Done]
        /// How the task ends.
        var ending = Ending.now(close: nil)
    }

    /// How a task whose connection ended completes.
    enum Ending {
        /// Now: with `didCloseWith` first for a clean close, else with the connection's error (or none).
        case now(close: HeldClose?)
        /// When a receive reads the clean close, which is held till then — or, given a grace, after it.
        case whenAReceiveReadsTheClose(orAfter: Duration?)
    }

    /// The connection ended: the close code and reason are recorded, and what waited is handed back to fail
    /// (messages already held can still be received). Later receives, sends and pings fail with `receiveError`
    /// alike: after a clean close, Darwin's `ENOTCONN` for each of them, not a lost connection for the sends.
    ///
    /// After a close handshake, `closeCode` and `closeReason` both come from the close the connection reports — the
    /// one the delegate's `didCloseWith` hears — never one from each side: when the server's close crossed the app's
    /// `cancel(with:reason:)`, the server's close is the one that happened (the app's closed nothing), and its reason
    /// goes with its code even when that code has no case of its own (`.other`) or its reason is empty.
    ///
    /// A clean close (`closure.code` without an error) is what the app is told of, with `didCloseWith` and the task's
    /// completion. On Darwin the close frame is read by the app's receives, after the messages before it; so the
    /// close is held (`Waiting.ending` is `.whenAReceiveReadsTheClose`) and told after the receive that reads it:
    /// - a close the server began, while messages before it wait for the app, or while no receive waits in an app
    ///   that has received messages (its receive loop has a message in hand and asks again once done with it: told
    ///   at once, the close would overtake that message): held until a receive finds no message left — for
    ///   ``URLSessionWebSocketTask/heldCloseGrace`` at most once the app has every message, for an app that has no
    ///   receive loop;
    /// - a close the app asked for, while messages wait: held until a receive takes the last of them.
    /// A receive waiting when the close comes reads it: it fails, and the close is told at once, as it is to an
    /// app that has never received (it has no receive loop to read it). `closeCode` and `closeReason` are set at once.
    mutating func closed(_ closure: WebSocketClosure, receiveError: any Error) -> Waiting {
        var clean: HeldClose?
        if let code = closure.code {
            closeCode = URLSessionWebSocketTask.CloseCode(code: Int(code))
            closeReason = closure.reason.isEmpty ? nil : Data(closure.reason)
            if closure.error == nil { clean = HeldClose(code: closeCode, reason: closeReason) }
        }
        phase = .closed(receiveError)
        defer {
            receivers = []
            queuedSends = []
            queuedPings = []
        }
        var ending = Ending.now(close: clean)
        let serverBegan = !closeWasAsked
        let unread = !messages.isEmpty || (serverBegan && receivers.isEmpty && hasReceived)
        if clean != nil && unread {
            heldClose = clean
            // Without messages waiting, the hold is for a receive loop's next receive only: bounded.
            ending = .whenAReceiveReadsTheClose(orAfter: messages.isEmpty ? heldCloseGrace : nil)
        }
        return Waiting(receivers: receivers, sends: queuedSends, pings: queuedPings, ending: ending)
    }
}
