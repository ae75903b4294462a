import CourierHTTP

/// What the task engine needs from a network: run one request and stream its response to a consumer.
///
/// ``HTTPTransport`` is the real one (a connection pool over SwiftNIO); engine tests use a fake that scripts
/// responses without sockets. One transport serves one session. A class: every request's source holds its session's
/// transport, and a class reference is a third of an existential's inline buffer.
public protocol Transport: AnyObject, Sendable {
    /// Starts `request`; its events go to `consumer` (see ``TransportResponseConsumer`` for their order). The
    /// handle cancels, pauses, resumes or drains it.
    func execute(_ request: TransportRequest, consumer: any TransportResponseConsumer) -> any ExchangeHandle

    /// Closes idle connections and fails queued requests. Requests already running finish.
    func shutdown()

    /// Closes the connections that run nothing; the transport stays usable and later requests open new
    /// connections (`URLSession.flush` and `reset`).
    func closeIdleConnections()

    /// A raw TCP connection to `host`:`port` for a stream task, on the transport's event loops; it connects when
    /// told to. The default runs on NIO's shared event loop group.
    func makeStreamConnection(
        host: String, port: Int, onEvent: @escaping @Sendable (StreamConnectionEvent) -> Void
    ) -> StreamConnection
}

/// The engine's handle on one running request.
///
/// Every method may be called from any thread, in any order, any number of times; calls after the exchange
/// ended do nothing.
public protocol ExchangeHandle: AnyObject, Sendable {
    /// Stops the request; the consumer gets `transportDidFail(error)` unless the exchange already ended.
    func cancel(_ error: TransferError)

    /// Stops reading the response (backpressure); the request timeout does not run while paused.
    func pause()

    /// Continues reading after ``pause()``.
    func resume()

    /// Reads and discards the rest of the response so that its connection can serve the next request (a redirect
    /// or an authentication retry); when more than `limit` bytes remain, the connection is closed instead. The
    /// consumer gets no further events; `completion` runs once, when the connection is free or closed.
    func drain(limit: Int, then completion: @escaping @Sendable () -> Void)
}

extension ExchangeHandle {
    /// Cancels with `URLError(.cancelled)`.
    public func cancel() { cancel(.cancelled()) }
}
