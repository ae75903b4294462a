import Foundation

/// A message or control frame a ``MockServer`` WebSocket endpoint received from a client, as
/// ``MockServer/webSocketMessages(path:)`` lists them.
public enum RecordedWebSocketMessage: Sendable, Equatable {
    /// A complete text message (its fragments reassembled).
    case text(String)
    /// A complete binary message (its fragments reassembled).
    case data(Data)
    /// A ping and its payload.
    case ping(Data)
    /// A pong and its payload.
    case pong(Data)
    /// A close frame: its status code (`nil` when the frame had no payload) and reason.
    case close(code: UInt16?, reason: String)
}
