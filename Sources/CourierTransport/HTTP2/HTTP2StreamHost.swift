import CourierHTTP

/// What the handler of an HTTP/2 stream asks of the connection it runs on: whether an error means the server never
/// processed the stream, and what the connection knows about a failure that the stream's own error does not say.
///
/// The connection itself answers, for all its streams: one reference per stream where three closures were each
/// allocated per stream.
protocol HTTP2StreamHost: AnyObject {
    /// Whether an error that ended the stream before any response byte means the server never processed it
    /// (`REFUSED_STREAM`, or a stream above a `GOAWAY`'s last id), so that it may be sent again on another
    /// connection whatever its method.
    func streamWasUnprocessed(_ error: any Error) -> Bool
    /// The failure to report for an error that ended the stream, when the connection knows more than the error says,
    /// else `nil`. NIOHTTP2 resets a stream whose response breaks the protocol and tells the stream only of the
    /// reset, with the same error as a reset by the server.
    func streamFailure(_ error: any Error) -> TransferError?
    /// The failure to report when the stream closed with its connection before the response ended, when the
    /// connection was closed for the server's protocol violation (NIOHTTP2 sent `GOAWAY`: a CONTINUATION or PING
    /// flood, a header list over the announced limit, a malformed frame), else `nil`. NIOHTTP2 closes such a
    /// connection's streams without an error, as if the network had dropped it.
    func connectionFailure() -> TransferError?
}
