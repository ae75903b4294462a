import CourierHTTP
import NIOCore

/// A WebSocket message, as the connection delivers and sends it.
public enum WebSocketMessage: Sendable {
    /// A text message.
    case text(String)
    /// A binary message.
    case binary(ByteBuffer)
}

/// How a WebSocket connection ended.
public struct WebSocketClosure: Sendable, Equatable {
    /// The close code of the handshake: the server's (its close frame's, 1005 when it had none) when the server
    /// closed first, the one sent when the client did (also for a protocol violation); `nil` when the connection
    /// ended without a close handshake.
    public var code: UInt16?
    /// The close reason that went with `code`.
    public var reason: [UInt8]
    /// Why the connection failed: `nil` after a clean close handshake.
    public var error: TransferError?

    /// Creates a closure.
    public init(code: UInt16?, reason: [UInt8], error: TransferError?) {
        self.code = code
        self.reason = reason
        self.error = error
    }
}

/// What a ``WebSocketConnection`` tells its owner. Called on the connection's event loop, in order: it must not
/// block (hand the work to the delegate queue).
public protocol WebSocketConnectionDelegate: AnyObject, Sendable {
    /// A whole message arrived.
    func webSocketDidReceive(_ message: WebSocketMessage)
    /// The connection ended; called once, last.
    func webSocketDidClose(_ closure: WebSocketClosure)
}
