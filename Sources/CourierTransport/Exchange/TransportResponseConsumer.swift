import CourierHTTP
import NIOCore

/// Receives the events of one exchange from the transport.
///
/// Lifecycle: zero or more `transportDidSendBodyData`, then `transportDidReceiveHead` once, then zero or more
/// `transportDidReceiveBodyPart`, then exactly one of `transportDidFinish` or `transportDidFail`. A failure may
/// come at any point, also before the head. The methods are called on an event loop: they must return quickly
/// and never block; to slow the transfer down, the consumer calls ``TransportExchange/pause()``.
public protocol TransportResponseConsumer: AnyObject, Sendable {
    /// Body bytes were written to the socket.
    func transportDidSendBodyData(bytesSent: Int64, totalBytesSent: Int64)
    /// An informational (1xx) head arrived before the final one: any but `100 Continue` (the transport's own
    /// business) and `101 Switching Protocols` (an upgrade), e.g. `103 Early Hints`.
    func transportDidReceiveInformationalHead(_ head: TransportResponseHead)
    /// The final (non-1xx) response head arrived.
    func transportDidReceiveHead(_ head: TransportResponseHead)
    /// A part of the (decoded) response body arrived.
    func transportDidReceiveBodyPart(_ part: ByteBuffer)
    /// The response ended normally.
    func transportDidFinish()
    /// The exchange failed; no further events follow.
    func transportDidFail(_ error: TransferError)
    /// The exchange's timeline, just before `transportDidFinish` or `transportDidFail`. For observers only.
    func transportDidCollect(_ timeline: TransportTimeline)
    /// No network path leads to the host and the request waits for one (``TransportRequest/waitsForConnectivity``);
    /// said once per exchange, before any other event.
    func transportIsWaitingForConnectivity()
}

extension TransportResponseConsumer {
    /// Consumers that do not observe timelines ignore them.
    public func transportDidCollect(_ timeline: TransportTimeline) {}

    /// Consumers that do not deliver informational responses ignore them.
    public func transportDidReceiveInformationalHead(_ head: TransportResponseHead) {}

    /// Consumers that do not report waiting ignore it.
    public func transportIsWaitingForConnectivity() {}
}
