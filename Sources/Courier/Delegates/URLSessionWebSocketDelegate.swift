import Foundation

/// Events of WebSocket tasks.
public protocol URLSessionWebSocketDelegate: URLSessionTaskDelegate {
    /// The WebSocket handshake succeeded.
    func urlSession(
        _ session: URLSession,
        webSocketTask: URLSessionWebSocketTask,
        didOpenWithProtocol protocol: String?
    )
    /// The server closed the WebSocket.
    func urlSession(
        _ session: URLSession,
        webSocketTask: URLSessionWebSocketTask,
        didCloseWith closeCode: URLSessionWebSocketTask.CloseCode,
        reason: Data?
    )
}

/// A task's own delegate that lacks a method hands the event to the session's delegate, as on Darwin (see
/// `URLSessionTask.sessionFallback(from:as:)`).
extension URLSessionWebSocketDelegate {
    public func urlSession(
        _ session: URLSession,
        webSocketTask: URLSessionWebSocketTask,
        didOpenWithProtocol protocol: String?
    ) {
        webSocketTask.sessionFallback(from: self, as: URLSessionWebSocketDelegate.self)?.urlSession(
            session, webSocketTask: webSocketTask, didOpenWithProtocol: `protocol`)
    }
    public func urlSession(
        _ session: URLSession,
        webSocketTask: URLSessionWebSocketTask,
        didCloseWith closeCode: URLSessionWebSocketTask.CloseCode,
        reason: Data?
    ) {
        webSocketTask.sessionFallback(from: self, as: URLSessionWebSocketDelegate.self)?.urlSession(
            session, webSocketTask: webSocketTask, didCloseWith: closeCode, reason: reason)
    }
}
