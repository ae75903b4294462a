import NIOCore

/// A ``TransportBodyReader`` over a regular file, whose bytes a plain TCP connection sends with `sendfile(2)`: from
/// the page cache to the socket, without a read into the process or a copy.
///
/// Only a connection with nothing between the HTTP/1.1 codec and the socket that needs the bytes themselves takes
/// this path: not TLS, not a proxy, not an HTTP/2 stream. The others read the file in chunks through
/// ``TransportBodyReader/read(maxLength:)``.
public protocol FileRegionBodyReader: TransportBodyReader {
    /// A descriptor of its own on the file (close-on-exec), which the caller owns and closes once every write that
    /// uses it has completed; `nil` when the file cannot be opened again (the caller then reads it in chunks).
    func makeRegionDescriptor() -> Int32?
}
