import CourierHTTP
import NIOCore

/// A raw TCP connection to a host and port, read and written by queued calls: the transport side of
/// `URLSessionStreamTask`.
///
/// The connection exists before it connects: calls made before ``connect(timeout:)`` wait, in order, and run once it
/// is up. Reads are served in order, each once at least its minimum length is buffered or the input ended; the
/// socket is read only while a read waits (backpressure). Writes complete in order, once handed to the kernel.
/// `closeRead` and `closeWrite` take their turn behind the calls of their side; ``startTLS(_:completion:)`` and ``drain(completion:)``
/// wait for every earlier call and hold back every later one. Each call may have its own timeout, which fails that
/// call alone with `timedOut`.
///
/// Calls may come from any thread; each one hops to the connection's event loop, so calls made one after the other
/// by one thread keep their order. Completions run on that loop, and so do ``StreamConnectionEvent``s.
public final class StreamConnection: Sendable {
    /// The loop the connection runs on.
    public let eventLoop: any EventLoop
    /// The host and port it connects to.
    public let endpoint: Endpoint
    private let handler: NIOLoopBoundBox<StreamChannelHandler>

    /// Creates a connection to `host`:`port` on `eventLoop`; it connects at ``connect(timeout:)``.
    ///
    /// - Parameter onEvent: Told, on the event loop, when a side closes and when the connection ends; never after
    ///   ``StreamConnectionEvent/finished`` or ``StreamConnectionEvent/failed(_:)``. It must not block.
    public init(
        host: String, port: Int, eventLoop: any EventLoop,
        onEvent: @escaping @Sendable (StreamConnectionEvent) -> Void
    ) {
        var hostName = host
        if hostName.hasPrefix("["), hostName.hasSuffix("]") {
            hostName = String(hostName.dropFirst().dropLast())
        }
        let endpoint = Endpoint(scheme: .http, host: hostName, port: port)
        self.endpoint = endpoint
        self.eventLoop = eventLoop
        self.handler = NIOLoopBoundBox.makeBoxSendingValue(
            StreamChannelHandler(endpoint: endpoint, eventLoop: eventLoop, onEvent: onEvent), eventLoop: eventLoop)
    }

    /// Takes over a connection the server switched (a data task's `.becomeStream` after `101 Switching
    /// Protocols`) instead of connecting; it must run on this connection's event loop. Bytes that came behind the
    /// `101` head are the first to be read.
    public func adopt(_ upgraded: UpgradedConnection) {
        let handler = self.handler
        let channel = upgraded.channel
        eventLoop.execute { handler.value.adopting() }
        upgraded.start(
            { pipeline in
                // Read on demand from here on, and let the peer half-close, as for a connection of our own.
                try channel.syncOptions?.setOption(.autoRead, value: false)
                try channel.syncOptions?.setOption(.allowRemoteHalfClosure, value: true)
                try pipeline.addHandler(handler.value)
            },
            failed: { error in
                // The server closed the connection before it was taken over: every call fails, the task ends.
                handler.value.fail(
                    .networkConnectionLost("the connection closed before the stream task could take it over: \(error)"))
            })
    }

    /// Opens the connection (host names resolved by happy eyeballs, IPv6 and IPv4); a second call does nothing.
    /// A failure (mapped to Darwin's code: `cannotFindHost`, `cannotConnectToHost`, `timedOut`…) fails every call
    /// and is reported as ``StreamConnectionEvent/failed(_:)``.
    public func connect(timeout: TimeAmount) {
        let handler = handler
        eventLoop.execute { handler.value.connect(timeout: timeout) }
    }

    /// Reads at least `minLength` bytes (at least one) and at most `maxLength`, or what is left at the end of input.
    /// A read after the end of input succeeds with no bytes and `atEOF`.
    ///
    /// - Parameters:
    ///   - timeout: `nil` for none.
    ///   - completion: Runs on the event loop, in the order the calls complete.
    public func read(
        minLength: Int, maxLength: Int, timeout: TimeAmount?,
        completion: @escaping @Sendable (Result<StreamReadResult, any Error>) -> Void
    ) {
        let deadline = timeout.map { NIODeadline.now() + $0 }
        let handler = handler
        let eventLoop = eventLoop
        eventLoop.execute {
            // The callback is in place before the call is submitted: it runs as the call completes, ahead of any
            // event the same step reports.
            let promise = eventLoop.makePromise(of: StreamReadResult.self)
            promise.futureResult.whenComplete(completion)
            handler.value.submit(
                { .read(id: $0, minLength: minLength, maxLength: maxLength) }, read: promise, deadline: deadline)
        }
    }

    /// Writes `bytes`; `completion` runs once they were handed to the kernel (or to TLS).
    ///
    /// - Parameter timeout: `nil` for none. A write that times out fails, but its bytes may still go out.
    public func write(
        _ bytes: ByteBuffer, timeout: TimeAmount?, completion: @escaping @Sendable (Result<Void, any Error>) -> Void
    ) {
        submit({ .write(id: $0, bytes: bytes) }, timeout: timeout, completion: completion)
    }

    /// Closes the read side once the earlier reads are done: later reads fail with
    /// ``StreamConnectionError/readSideClosed``, and the socket is not read any more.
    public func closeRead(completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        submit({ .closeRead(id: $0) }, timeout: nil, completion: completion)
    }

    /// Shuts the write side of the socket down (the peer reads the end of input) once the earlier writes went out;
    /// later writes fail with ``StreamConnectionError/writeSideClosed``. ``StreamConnectionEvent/writeClosed``
    /// follows.
    public func closeWrite(completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        submit({ .closeWrite(id: $0) }, timeout: nil, completion: completion)
    }

    /// Starts TLS once every earlier call is done; later calls go through TLS. `completion` succeeds when the
    /// handshake completed; a failed handshake fails the connection with the mapped error
    /// (`serverCertificateUntrusted`, `secureConnectionFailed`, `timedOut`…).
    public func startTLS(_ setup: StreamTLSSetup, completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        submit({ .barrier(id: $0, .startTLS) }, timeout: nil, tls: setup, completion: completion)
    }

    /// `completion` succeeds once every earlier call is done; later calls wait for it.
    public func drain(completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        submit({ .barrier(id: $0, .drain) }, timeout: nil, completion: completion)
    }

    /// Ends the connection: every pending and later call fails with `error`, then it closes.
    public func cancel(_ error: TransferError) {
        let handler = handler
        eventLoop.execute { handler.value.fail(error) }
    }

    private func submit(
        _ make: @escaping @Sendable (StreamStateMachine.ID) -> StreamStateMachine.Operation, timeout: TimeAmount?,
        tls: StreamTLSSetup? = nil, completion: @escaping @Sendable (Result<Void, any Error>) -> Void
    ) {
        let deadline = timeout.map { NIODeadline.now() + $0 }
        let handler = handler
        let eventLoop = eventLoop
        eventLoop.execute {
            let promise = eventLoop.makePromise(of: Void.self)
            promise.futureResult.whenComplete(completion)
            handler.value.submit(make, done: promise, deadline: deadline, tls: tls)
        }
    }
}
