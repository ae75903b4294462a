import NIOCore

/// One step of a ``MockTCPServer`` in ``MockTCPServer/Mode/script(_:)`` mode, run in order on every connection.
public enum MockTCPStep: Sendable, Equatable {
    /// Sends these bytes.
    case send([UInt8])
    /// Waits this long.
    case wait(TimeAmount)
    /// Waits until the test fires this signal.
    case waitForSignal(MockTCPSignal)
    /// Waits until the connection has received at least this many bytes in all (or the client's end of input).
    case receive(atLeast: Int)
    /// Stops reading: what the client writes from then on fills the socket buffers, and its writes then wait (as in
    /// ``MockTCPServer/Mode/silent``), while the script goes on.
    case stopReading
    /// Shuts the write side down: the client reads the end of input, and may still write.
    case closeWrite
    /// Closes the connection.
    case close

    /// Sends the UTF-8 bytes of `text`.
    public static func send(_ text: String) -> MockTCPStep {
        .send(Array(text.utf8))
    }
}
