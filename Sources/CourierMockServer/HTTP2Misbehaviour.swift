import NIOHTTP2

/// A scripted protocol-level misbehaviour of an HTTP/2 server, for tests of how a client copes with a hostile or
/// failing server. Set it as ``MockResponse/http2Misbehaviour``; it applies only when the request came over HTTP/2.
///
/// The request is always recorded first (``MockServer/requests``), whatever the misbehaviour does to its stream.
public enum HTTP2Misbehaviour: Sendable {
    /// On receiving the request, send `GOAWAY` with `errorCode` and a last stream id two below this stream's (0 for
    /// stream 1): this stream and any later ones were not processed, so a client must retry them on a new
    /// connection. The server drops those streams without answering, finishes the earlier ones, and closes the
    /// connection shortly after the last of them ends.
    case goAway(errorCode: HTTP2ErrorCode)
    /// Answer normally; once this stream has ended, send `GOAWAY` (`NO_ERROR`) with this stream's id as the last
    /// stream id — a graceful shutdown: streams the client opened after this one were not processed. The connection
    /// closes shortly after its other streams have ended.
    case goAwayAfterResponse
    /// Reset the stream (`RST_STREAM` with `errorCode`, e.g. `.refusedStream` or `.internalError`) instead of
    /// answering.
    case resetStream(errorCode: HTTP2ErrorCode)
    /// Send the response's HEADERS (its status and header fields), then reset the stream (`RST_STREAM` with
    /// `errorCode`) instead of sending the body.
    case resetAfterHead(errorCode: HTTP2ErrorCode)
    /// Write `bytes` onto the connection beneath the HTTP/2 framing layer (after TLS), e.g. frames built with
    /// ``HTTP2RawFrame``: a DATA frame on stream 0, a frame with a wrong length, a HEADERS frame with a garbage header
    /// block, a PUSH_PROMISE although push is disabled. The server's own HTTP/2 state does not see them. With
    /// `thenRespond` false (the default) the request is left unanswered, as with ``MockResponse/neverRespond``;
    /// with `true` the response follows as usual. A route handler can aim frames at the request's stream through
    /// ``RecordedRequest/streamID``.
    case rawFrames([UInt8], thenRespond: Bool = false)
    /// Answer with a HEADERS frame (`END_HEADERS`, no `END_STREAM`) that carries `content-type: text/plain` but no
    /// `:status` — a malformed response — and nothing more.
    case headersWithoutStatus
}
