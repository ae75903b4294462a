import NIOHTTP2

extension MockServer {
    /// Makes each of the next `connections` connections that negotiate `h2` send `GOAWAY` (last stream id 0,
    /// `errorCode`) right behind the server's SETTINGS frame, in the same TLS write, before any request: a server that
    /// is shutting down or at its connection limit. The client reads both at once; no stream was processed, so it must
    /// send its request on another connection (RFC 9113 §8.7). The connection closes shortly after; later connections
    /// are served as usual.
    ///
    /// - Parameters:
    ///   - connections: How many of the next HTTP/2 connections go away (default 1).
    ///   - errorCode: The GOAWAY's error code (default `NO_ERROR`).
    public func goAwayWithSettings(onNext connections: Int = 1, errorCode: HTTP2ErrorCode = .noError) {
        state.queueGoAwayWithSettings(errorCode, count: connections)
    }
}
