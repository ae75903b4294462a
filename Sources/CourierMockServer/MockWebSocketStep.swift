import Foundation

/// One step of a scripted WebSocket endpoint (``MockWebSocketEndpoint/Behaviour/script(_:)``). The steps run in
/// order once the opening handshake is done; a step that sends waits first until the connection can take more
/// bytes, so a client that stops reading stalls the script.
///
/// Whatever the step, the endpoint answers every ping with a pong (unless ``ignorePings`` ran), records everything it receives (see
/// ``MockServer/webSocketMessages(path:)``) and answers a client's close frame with a close frame echoing its code
/// and reason (unless ``ignoreClose`` ran), which ends the script. Text and binary messages that arrive before a
/// step waits for them are kept, in order, for ``expectMessage`` and ``echoNext(_:)``. When the last step is done
/// the connection stays open and goes on answering pings and closes.
///
/// ```swift
/// .script(.send(text: "hello"), .expectMessage, .sendPing(Data([1])), .close(code: 4000, reason: "bye"))
/// ```
public struct MockWebSocketStep: Sendable {
    enum Action {
        case sendText(String)
        case sendData(Data)
        case sendFragmented(opcode: UInt8, payload: Data, fragmentSize: Int, pingBetween: Data?)
        case sendPing(Data)
        case expectMessage
        case echoNext(Int)
        case wait(Duration)
        case close(code: UInt16?, reason: String)
        case sendRaw([UInt8])
        case dropConnection
        case ignoreClose
        case ignorePings
    }

    let action: Action

    /// Sends a text message in one frame.
    public static func send(text: String) -> MockWebSocketStep {
        MockWebSocketStep(action: .sendText(text))
    }

    /// Sends a binary message in one frame.
    public static func send(data: Data) -> MockWebSocketStep {
        MockWebSocketStep(action: .sendData(data))
    }

    /// Sends a text message as fragments of `fragmentSize` bytes of UTF-8 (a fragment may end inside a character,
    /// which the protocol allows): a text frame without FIN, continuation frames, the last with FIN.
    ///
    /// - Parameters:
    ///   - text: The message.
    ///   - fragmentSize: The payload size of each fragment but the last (at least 1).
    ///   - pingBetween: If set, a ping with this payload goes out after the first fragment (control frames may come
    ///     between fragments); nothing is sent when the message fits in one fragment.
    public static func sendFragmented(text: String, fragmentSize: Int, pingBetween: Data? = nil) -> MockWebSocketStep {
        let payload = Data(text.utf8)
        return MockWebSocketStep(
            action: .sendFragmented(
                opcode: MockWebSocketFrame.Opcode.text,
                payload: payload,
                fragmentSize: fragmentSize,
                pingBetween: pingBetween
            )
        )
    }

    /// Sends a binary message as fragments of `fragmentSize` bytes, as
    /// ``sendFragmented(text:fragmentSize:pingBetween:)`` does for text.
    public static func sendFragmented(data: Data, fragmentSize: Int, pingBetween: Data? = nil) -> MockWebSocketStep {
        MockWebSocketStep(
            action: .sendFragmented(
                opcode: MockWebSocketFrame.Opcode.binary,
                payload: data,
                fragmentSize: fragmentSize,
                pingBetween: pingBetween
            )
        )
    }

    /// Sends a ping with `payload` (at most 125 bytes for a valid ping); the client's pong is recorded.
    public static func sendPing(_ payload: Data = Data()) -> MockWebSocketStep {
        MockWebSocketStep(action: .sendPing(payload))
    }

    /// Waits for the next text or binary message from the client (one that already arrived counts).
    public static var expectMessage: MockWebSocketStep {
        MockWebSocketStep(action: .expectMessage)
    }

    /// Waits for the next `count` text or binary messages from the client and sends each back as it comes, as text
    /// or binary as it came.
    public static func echoNext(_ count: Int) -> MockWebSocketStep {
        MockWebSocketStep(action: .echoNext(count))
    }

    /// Waits for `duration`.
    public static func wait(_ duration: Duration) -> MockWebSocketStep {
        MockWebSocketStep(action: .wait(duration))
    }

    /// Sends a close frame, then waits for the client's close frame and closes the TCP connection, or closes it after
    /// the endpoint's ``MockWebSocketEndpoint/closeTimeout`` (10 s by default) without one. The steps after this one
    /// do not run.
    ///
    /// - Parameters:
    ///   - code: The status code, or `nil` for a close frame without payload (then `reason` is not sent).
    ///   - reason: The reason, as UTF-8.
    public static func close(code: UInt16? = 1000, reason: String = "") -> MockWebSocketStep {
        MockWebSocketStep(action: .close(code: code, reason: reason))
    }

    /// Writes `bytes` verbatim on the connection (TLS-encrypted on `wss`), for malformed frames: build them with
    /// ``MockWebSocketFrame``.
    public static func sendRaw(_ bytes: [UInt8]) -> MockWebSocketStep {
        MockWebSocketStep(action: .sendRaw(bytes))
    }

    /// Closes the TCP connection at once, without a close frame. The steps after this one do not run.
    public static var dropConnection: MockWebSocketStep {
        MockWebSocketStep(action: .dropConnection)
    }

    /// From now on, never answers the client's close frame (it is still recorded) and goes on with the script: the
    /// connection stays open until the client closes it, for close-timeout tests.
    public static var ignoreClose: MockWebSocketStep {
        MockWebSocketStep(action: .ignoreClose)
    }

    /// From now on, never answers the client's pings (they are still recorded) and goes on with the script: a server
    /// that is slow to answer, or answers with pongs of its own (``sendRaw(_:)`` with a pong frame), for ping tests.
    public static var ignorePings: MockWebSocketStep {
        MockWebSocketStep(action: .ignorePings)
    }
}
