import Foundation
import NIOCore

/// Runs the ``MockWebSocketStep``s of a scripted endpoint on a ``WebSocketSession``, in order: a step that sends
/// waits until the connection is writable, ``MockWebSocketStep/expectMessage`` and ``MockWebSocketStep/echoNext(_:)``
/// wait for the client's messages (keeping those that come early), ``MockWebSocketStep/wait(_:)`` waits on a timer.
///
/// Lives on the connection's event loop; the session calls ``run()`` whenever something a step may be waiting for
/// happens.
final class WebSocketScriptRunner {
    private enum Progress {
        case done
        case waiting
    }

    private let steps: [MockWebSocketStep]
    /// The session owns the runner and stops it before it goes.
    private unowned let session: WebSocketSession
    private let eventLoop: any EventLoop
    private var nextStep = 0
    /// Messages the client sent that no step has taken yet, oldest first.
    private var inbox = CircularBuffer<WebSocketDataMessage>()
    /// How many messages the current ``MockWebSocketStep/echoNext(_:)`` has still to echo.
    private var echoesLeft: Int?
    private var timer: Scheduled<Void>?
    private var isRunning = false
    private var isStopped = false

    init(steps: [MockWebSocketStep], session: WebSocketSession, eventLoop: any EventLoop) {
        self.steps = steps
        self.session = session
        self.eventLoop = eventLoop
    }

    /// Keeps a message for the steps that wait for one, and goes on if one does.
    func messageArrived(_ message: WebSocketDataMessage) {
        inbox.append(message)
        run()
    }

    /// Runs the steps from where the script stands until one has to wait, or none is left.
    func run() {
        // A write can call back (writability) into `run()`: the loop already running goes on by itself.
        guard !isRunning, !isStopped, timer == nil else { return }
        isRunning = true
        defer {
            isRunning = false
            session.flush()
        }
        while nextStep < steps.count, !isStopped {
            let step = steps[nextStep]
            if Self.sends(step) && !session.isWritable {
                return
            }
            guard perform(step) == .done else { return }
            nextStep += 1
        }
    }

    /// Stops for good: no further step runs.
    func stop() {
        isStopped = true
        timer?.cancel()
        timer = nil
    }

    private func perform(_ step: MockWebSocketStep) -> Progress {
        switch step.action {
        case .sendText(let text):
            sendIfOpen(WebSocketDataMessage(opcode: MockWebSocketFrame.Opcode.text, payload: ByteBuffer(string: text)))
        case .sendData(let data):
            sendIfOpen(WebSocketDataMessage(opcode: MockWebSocketFrame.Opcode.binary, payload: ByteBuffer(bytes: data)))
        case .sendFragmented(let opcode, let payload, let fragmentSize, let pingBetween):
            if session.canSend {
                session.sendFragmented(
                    opcode: opcode,
                    payload: ByteBuffer(bytes: payload),
                    fragmentSize: fragmentSize,
                    pingBetween: pingBetween
                )
            }
        case .sendPing(let payload):
            if session.canSend {
                session.sendPing(payload)
            }
        case .expectMessage:
            guard inbox.popFirst() != nil else { return .waiting }
        case .echoNext(let count):
            return echo(count)
        case .wait(let duration):
            timer = eventLoop.assumeIsolated().scheduleTask(in: TimeAmount(duration)) {
                self.timer = nil
                self.nextStep += 1
                self.run()
            }
            return .waiting
        case .close(let code, let reason):
            stop()
            session.startClose(code: code, reason: reason)
        case .sendRaw(let bytes):
            session.sendRaw(bytes)
        case .dropConnection:
            stop()
            session.drop()
        case .ignoreClose:
            session.ignoresClose = true
        case .ignorePings:
            session.ignoresPings = true
        }
        return .done
    }

    private func echo(_ count: Int) -> Progress {
        var left = echoesLeft ?? count
        while left > 0, let message = inbox.popFirst() {
            sendIfOpen(message)
            left -= 1
        }
        echoesLeft = left > 0 ? left : nil
        return left > 0 ? .waiting : .done
    }

    private func sendIfOpen(_ message: WebSocketDataMessage) {
        if session.canSend {
            session.sendMessage(message)
        }
    }

    /// Whether `step` writes to the connection, and so has to wait for it to be writable.
    private static func sends(_ step: MockWebSocketStep) -> Bool {
        switch step.action {
        case .sendText, .sendData, .sendFragmented, .sendPing, .echoNext, .close, .sendRaw:
            return true
        case .expectMessage, .wait, .dropConnection, .ignoreClose, .ignorePings:
            return false
        }
    }
}
