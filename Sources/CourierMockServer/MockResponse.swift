import Foundation

/// A scripted response, or a scripted misbehaviour, of a ``MockServer``.
///
/// By default the response is written as `HTTP/1.1 <status> <reason>`, followed by ``headers`` exactly as given,
/// a `Content-Length` header (unless one is present, ``chunked`` is set or ``raw`` is used) and the ``body``.
public struct MockResponse: Sendable {
    /// The status code (default 200).
    public var status: Int
    /// The reason phrase; `nil` uses the standard phrase for ``status``.
    public var reason: String?
    /// Header fields, written in order and as given. `Content-Length` is added automatically unless present,
    /// ``chunked`` is set or ``raw`` is used.
    public var headers: [(name: String, value: String)]
    /// The body (default: empty).
    public var body: MockBody
    /// Use `Transfer-Encoding: chunked` instead of `Content-Length`.
    public var chunked: Bool = false
    /// Bytes per write, and per chunk when ``chunked`` is set (default 16 KiB).
    public var chunkSize: Int = 16 * 1024
    /// Informational (1xx) heads written, in order, before the final one — e.g. `103 Early Hints` with `Link`
    /// fields. They go out at once; ``headDelay`` then delays the final head.
    public var informational: [(status: Int, headers: [(name: String, value: String)])] = []
    /// Time to wait before writing the head (default `.zero`).
    public var headDelay: Duration = .zero
    /// Time to wait between body writes, for throttling (default `.zero`).
    public var chunkDelay: Duration = .zero
    /// If set: write the head and only this many body bytes, then close the connection (a truncated body). Over
    /// HTTP/2 the stream is reset (`RST_STREAM` with `CANCEL`) instead.
    public var closeAfterBodyBytes: Int?
    /// If set: write the head and only this many body bytes, then send nothing more and keep the connection open (a
    /// server that stalls mid-body), until the client or ``MockServer/shutdown()`` closes it. HTTP/1.1 only.
    public var stallAfterBodyBytes: Int?
    /// If set: write these bytes verbatim instead of a response, then close the connection (malformed responses).
    /// They are written ``chunkSize`` bytes at a time, ``chunkDelay`` apart. Over HTTP/2 they are read as an HTTP/1.1
    /// response and sent as HEADERS and DATA when they parse (the stream is reset with `CANCEL` if the response is
    /// incomplete when they end); bytes that do not parse reset the stream with `INTERNAL_ERROR`. Use
    /// ``http2Misbehaviour`` for broken HTTP/2 framing.
    public var raw: Data?
    /// Read the request and never answer (for timeouts). The connection stays open until the client or
    /// ``MockServer/shutdown()`` closes it.
    public var neverRespond: Bool = false
    /// Close the connection right after the request arrives, without writing anything. Over HTTP/2 only the stream
    /// is closed (`RST_STREAM` with `CANCEL`).
    public var closeWithoutResponse: Bool = false
    /// Bytes written right after the response on a connection that stays open — what a confused server sends after
    /// a `Content-Length` body. The client must never read them as the next response.
    public var trailingBytes: Data?
    /// Over HTTPS: when this response closes the connection (``raw``, ``closeConnection``,
    /// ``closeAfterBodyBytes``), end TCP without TLS's `close_notify` alert, as many servers do. Ignored without TLS.
    public var closesWithoutTLSCloseNotify: Bool = false
    /// Add `Connection: close` and close the connection after the response. Ignored over HTTP/2, where a stream ends
    /// with its response anyway (use ``HTTP2Misbehaviour/goAwayAfterResponse`` to end the connection).
    public var closeConnection: Bool = false

    /// The part of ``body`` to send, for partial content (a scripted 206); `nil` sends the whole body. The
    /// `Content-Length` follows the range; `Content-Range` is the script's to set.
    public var bodyRange: Range<Int64>?

    /// A protocol-level misbehaviour of an HTTP/2 server, applied when the request came over HTTP/2 (an `.http2`
    /// server that negotiated `h2`); ignored over HTTP/1. See ``HTTP2Misbehaviour``.
    public var http2Misbehaviour: HTTP2Misbehaviour?

    /// Creates a response.
    ///
    /// - Parameters:
    ///   - status: The status code.
    ///   - headers: Header fields, written in order and as given.
    ///   - body: The body.
    public init(status: Int = 200, headers: [(name: String, value: String)] = [], body: MockBody = .data(Data())) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A 200 response with a text body.
    ///
    /// - Parameters:
    ///   - text: The body, encoded as UTF-8.
    ///   - contentType: The `Content-Type` header value.
    public static func ok(_ text: String, contentType: String = "text/plain; charset=utf-8") -> MockResponse {
        MockResponse(status: 200, headers: [("Content-Type", contentType)], body: .data(Data(text.utf8)))
    }

    /// A 200 response with a binary body.
    ///
    /// - Parameters:
    ///   - data: The body.
    ///   - contentType: The `Content-Type` header value.
    public static func ok(_ data: Data, contentType: String = "application/octet-stream") -> MockResponse {
        MockResponse(status: 200, headers: [("Content-Type", contentType)], body: .data(data))
    }

    /// A response that never comes: the request is read and left unanswered (for timeout tests).
    public static var silent: MockResponse {
        var response = MockResponse.ok("")
        response.neverRespond = true
        return response
    }

    /// A text response whose head is written only after `delay` (for cancellation and queueing tests).
    public static func delayed(_ text: String, by delay: Duration) -> MockResponse {
        var response = MockResponse.ok(text)
        response.headDelay = delay
        return response
    }

    /// A response with the given status code and an empty body.
    public static func status(_ code: Int) -> MockResponse {
        MockResponse(status: code)
    }

    /// Writes the UTF-8 bytes of `bytes` verbatim instead of a response, then closes the connection.
    public static func raw(_ bytes: String) -> MockResponse {
        var response = MockResponse()
        response.raw = Data(bytes.utf8)
        return response
    }

    /// Writes the UTF-8 bytes of `bytes` verbatim in pieces of `pieceSize` bytes, `delay` apart (a response that
    /// trickles in), then closes the connection.
    public static func trickle(_ bytes: String, pieceSize: Int, delay: Duration) -> MockResponse {
        var response = MockResponse.raw(bytes)
        response.chunkSize = pieceSize
        response.chunkDelay = delay
        return response
    }
}

extension MockResponse {
    /// The first value of the header `name`, compared case-insensitively.
    func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    /// Whether a header called `name` is present, compared case-insensitively.
    func hasHeader(_ name: String) -> Bool {
        header(name) != nil
    }
}
