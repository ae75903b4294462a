import CourierHTTP
import NIOCore

/// What a ``StreamConnection`` tells its owner, from the connection's event loop, in the order it happened.
public enum StreamConnectionEvent: Equatable, Sendable {
    /// The peer closed its write side: the end of input was read.
    case readClosed
    /// The app's `closeWrite` went out: the write side of the socket is shut down.
    case writeClosed
    /// Both sides are closed and nothing is pending: the connection ended cleanly and is closed.
    case finished
    /// The connection failed, was cancelled, or a TLS handshake failed; every pending call failed with the error.
    case failed(TransferError)
}

/// The outcome of a read.
public struct StreamReadResult: Sendable, Equatable {
    /// The bytes read; `nil` when there were none (at the end of input).
    public var bytes: ByteBuffer?
    /// Whether the end of input was reached: no byte will follow.
    public var atEOF: Bool

    /// Creates a result.
    public init(bytes: ByteBuffer?, atEOF: Bool) {
        self.bytes = bytes
        self.atEOF = atEOF
    }
}

/// A call the app made after closing that side of the connection.
public enum StreamConnectionError: Error, Equatable, Sendable {
    /// A read after `closeRead`.
    case readSideClosed
    /// A write after `closeWrite`.
    case writeSideClosed
}
