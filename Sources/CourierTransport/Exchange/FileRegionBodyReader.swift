import NIOCore

/// A ``TransportBodyReader`` over a regular file, whose bytes a plain TCP connection sends with `sendfile(2)`: from
/// the page cache to the socket, without a read into the process, a hop to a thread pool and back, or a copy.
///
/// Only a connection with nothing between the HTTP/1.1 codec and the socket that needs the bytes themselves takes
/// this path: not TLS, not a proxy's handshake handlers, not an HTTP/2 stream. The others read the file in chunks
/// through ``TransportBodyReader/read(maxLength:)``.
public protocol FileRegionBodyReader: TransportBodyReader {
    /// A handle of its own on the file, positioned nowhere in particular (regions name their offsets): the caller
    /// closes it once every write that uses it has completed.
    func makeRegionHandle() throws -> NIOFileHandle
}
