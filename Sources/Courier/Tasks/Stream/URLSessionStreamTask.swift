import CourierHTTP
import CourierTransport
import Foundation
import NIOCore
import NIOFoundationCompat

/// A task over a raw TCP connection to a host and port, optionally secured with TLS on the way (STARTTLS).
///
/// Created by `URLSession.streamTask(withHostName:port:)`; `resume()` opens the connection (host names resolved
/// with happy eyeballs, IPv6 and IPv4) within the session's `timeoutIntervalForRequest`. Reads and writes may be
/// made before: they wait for the connection. Reads are served in order, and so are writes; each call has its own
/// timeout. The socket is read only while a read waits, so bytes the app does not ask for are not buffered.
///
/// Completion handlers and delegate calls run on the session's delegate queue, in the order the events happened.
/// The task completes (`urlSession(_:task:didCompleteWithError:)`) when both sides are closed: the app read up to the
/// end of input (or called ``closeRead()``) and called ``closeWrite()``; or with the error that broke the
/// connection, or `URLError(.cancelled)` after `cancel()`. After ``captureStreams()`` it completes without a
/// delegate call, as on Darwin.
///
/// Linux behaviour, documented differences from Darwin:
/// - Stream tasks connect directly: the session's proxy settings are not used.
/// - `urlSession(_:betterRouteDiscoveredFor:)` is never called (there is no path monitor to find one).
/// - `suspend()` changes ``URLSessionTask/state`` only: calls already made go on.
/// - A read with `minBytes` 0 still waits for one byte.
open class URLSessionStreamTask: URLSessionTask, @unchecked Sendable {
    let hostName: String
    let port: Int
    /// The connection; it exists from the start so that calls made before `resume()` wait in it, in order.
    let connection: StreamConnection

    init(session: URLSession, hostName: String, port: Int, identifier: Int) {
        self.hostName = hostName
        self.port = port
        let relay = StreamEventRelay()
        self.connection = session.transport.makeStreamConnection(host: hostName, port: port) { relay.deliver($0) }
        super.init(
            session: session, request: URLRequest(url: Self.url(host: hostName, port: port)), identifier: identifier,
            completionMode: .delegate)
        relay.attach(self)
    }

    /// The task's `tcp://host:port` URL.
    private static func url(host: String, port: Int) -> URL {
        var components = URLComponents()
        components.scheme = "tcp"
        components.host = host
        components.port = port
        return components.url ?? URL(fileURLWithPath: "/")
    }

    /// A stream task over a connection a data task handed over (`.becomeStream`): already running, no connect.
    ///
    /// `delegate` is the data task's own delegate, which carries over as on Darwin. It is set here, before the
    /// connection is adopted: from then on the connection's events (a close, a failure) may complete the task at
    /// once, and set afterwards they would go to the session's delegate instead.
    init(
        session: URLSession, adopting upgraded: UpgradedConnection, hostName: String, port: Int, identifier: Int,
        delegate: (any URLSessionTaskDelegate)?
    ) {
        self.hostName = hostName
        self.port = port
        let relay = StreamEventRelay()
        self.connection = StreamConnection(
            host: hostName, port: port, eventLoop: upgraded.channel.eventLoop, onEvent: { relay.deliver($0) })
        super.init(
            session: session, request: URLRequest(url: Self.url(host: hostName, port: port)), identifier: identifier,
            completionMode: .delegate)
        relay.attach(self)
        mutable.withLock { state in
            state.delegate = delegate
            _ = state.lifecycle.resume()
        }
        connection.adopt(upgraded)
    }

    /// Reads at least `minBytes` and at most `maxBytes` bytes; `completionHandler` gets them with whether the end of
    /// input was reached. At the end of input a read gets what is left (fewer than `minBytes`, or `nil` when nothing
    /// is) with `atEOF` true.
    ///
    /// - Parameters:
    ///   - minBytes: The fewest bytes to deliver (a read waits for at least one, also when this is 0).
    ///   - maxBytes: The most bytes to deliver.
    ///   - timeout: How long the read may wait, in seconds; 0 or less for no limit. When it runs out, this read fails
    ///     with `URLError(.timedOut)` and the task goes on.
    ///   - completionHandler: Called on the delegate queue with the bytes, whether the end of input was reached, and
    ///     the error: `URLError`, or `POSIXError(.ENOTCONN)` after ``closeRead()``.
    open func readData(
        ofMinLength minBytes: Int,
        maxLength maxBytes: Int,
        timeout: TimeInterval,
        completionHandler: @escaping @Sendable (Data?, Bool, (any Error)?) -> Void
    ) {
        let session = session
        connection.read(minLength: minBytes, maxLength: maxBytes, timeout: Self.limit(timeout)) { [self] result in
            switch result {
            case .success(let read):
                let data = read.bytes.map { Data(buffer: $0, byteTransferStrategy: .noCopy) }
                if let data { update { $0.countOfBytesReceived += Int64(data.count) } }
                session.dispatcher.async { completionHandler(data, read.atEOF, nil) }
            case .failure(let error):
                let reported = publicError(error)
                session.dispatcher.async { completionHandler(nil, false, reported) }
            }
        }
    }

    /// Writes `data` after the writes made before; `completionHandler` runs once it was handed to the network.
    ///
    /// - Parameters:
    ///   - data: The bytes to write.
    ///   - timeout: How long the write may wait, in seconds; 0 or less for no limit. When it runs out, this write
    ///     fails with `URLError(.timedOut)` (its bytes may still go out later) and the task goes on.
    ///   - completionHandler: Called on the delegate queue with `nil`, or the error: `URLError`, or
    ///     `POSIXError(.EPIPE)` after ``closeWrite()``.
    open func write(_ data: Data, timeout: TimeInterval, completionHandler: @escaping @Sendable ((any Error)?) -> Void)
    {
        let session = session
        let count = Int64(data.count)
        connection.write(ByteBuffer(data: data), timeout: Self.limit(timeout)) { [self] result in
            switch result {
            case .success:
                update { $0.countOfBytesSent += count }
                session.dispatcher.async { completionHandler(nil) }
            case .failure(let error):
                let reported = publicError(error)
                session.dispatcher.async { completionHandler(reported) }
            }
        }
    }

    /// Completes the reads and writes made before, then hands the connection over as a pair of streams through
    /// `urlSession(_:streamTask:didBecome:outputStream:)`; the task is then complete and gets no further delegate
    /// calls. Reading the input stream reads the connection, writing the output stream writes it, and closing the
    /// output stream closes the write side; the connection closes when both streams are closed (or released).
    open func captureStreams() {
        connection.drain { [self] result in
            if case .success = result { becomeStreams() }
        }
    }

    /// Closes the write side once the writes made before went out: the peer reads the end of input, and
    /// `urlSession(_:writeClosedFor:)` follows. Later writes fail. Reads go on.
    open func closeWrite() {
        connection.closeWrite { _ in }
    }

    /// Closes the read side once the reads made before completed: the socket is not read any more, bytes not read
    /// yet are dropped, and later reads fail. Writes go on.
    open func closeRead() {
        connection.closeRead { _ in }
    }

    /// Completes the reads and writes made before, then starts TLS on the connection, the host name as the server
    /// name; later reads and writes go through TLS. The server's certificate is evaluated as for the session's HTTPS
    /// requests: the session delegate's server-trust challenge, or the system's roots and the configuration's
    /// `courierAdditionalTrustedCertificates`. A failed handshake completes the task with the error (for example
    /// `URLError(.serverCertificateUntrusted)`), and every pending call fails with it.
    open func startSecureConnection() {
        connection.startTLS(tlsSetup()) { _ in }
    }

    /// Does nothing: TLS cannot be turned off once it is on. Darwin's method is deprecated and does nothing either
    /// ("TLS cannot be disabled once it is enabled").
    @available(*, deprecated, message: "TLS cannot be disabled once it is enabled")
    open func stopSecureConnection() {}

    /// Starts the task: opens the connection (once). Calls made before run once it is up.
    open override func resume() {
        let (action, createdOnInvalidSession) = mutable.withLock {
            ($0.lifecycle.resume(), $0.createdOnInvalidSession)
        }
        guard action == .start else { return }
        if let failure = startFailure(hasRequest: true, createdOnInvalidSession: createdOnInvalidSession) {
            connection.cancel(failure)
        } else {
            connection.connect(timeout: TaskEngine.timeAmount(session.sessionConfiguration.timeoutIntervalForRequest))
        }
    }

    /// Cancels the task: pending and later calls fail with `URLError(.cancelled)`, the connection closes, and the
    /// task completes with `URLError(.cancelled)`.
    open override func cancel() {
        let action = mutable.withLock { $0.lifecycle.cancel() }
        switch action {
        case .cancelTransfer, .completeWithoutTransfer:
            connection.cancel(.cancelled("the stream task was cancelled"))
        default:
            break
        }
    }

    /// A call's timeout: none for 0 or less, as on Darwin.
    private static func limit(_ timeout: TimeInterval) -> TimeAmount? {
        timeout > 0 ? TaskEngine.timeAmount(timeout) : nil
    }
}
