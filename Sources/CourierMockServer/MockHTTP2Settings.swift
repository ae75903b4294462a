/// The HTTP/2 settings an `.http2` ``MockServer`` announces in its `SETTINGS` frame on every connection that
/// negotiates `h2`.
public struct MockHTTP2Settings: Sendable, Hashable {
    /// `SETTINGS_MAX_CONCURRENT_STREAMS`: how many streams a client may have open at once (default 100). A client
    /// that opens more commits a connection error: the server answers with GOAWAY (`PROTOCOL_ERROR`).
    public var maxConcurrentStreams: Int
    /// `SETTINGS_INITIAL_WINDOW_SIZE`: the flow-control window, in bytes, the server gives each stream a client opens
    /// (default 65 535, at most 2³¹ − 1). The server reopens the window as it reads, keeping it at this size.
    public var initialWindowSize: Int

    /// Creates settings.
    ///
    /// - Parameters:
    ///   - maxConcurrentStreams: `SETTINGS_MAX_CONCURRENT_STREAMS` (default 100).
    ///   - initialWindowSize: `SETTINGS_INITIAL_WINDOW_SIZE` in bytes (default 65 535).
    public init(maxConcurrentStreams: Int = 100, initialWindowSize: Int = 65_535) {
        self.maxConcurrentStreams = maxConcurrentStreams
        self.initialWindowSize = initialWindowSize
    }
}
