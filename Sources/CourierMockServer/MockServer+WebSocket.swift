extension MockServer {
    /// Serves a WebSocket endpoint (RFC 6455) at exactly `path` (the request-target without its query), on
    /// HTTP/1.1 connections: `ws://` for `.http` servers, `wss://` for `.https` and `.http2` ones (where a WebSocket
    /// client negotiates `http/1.1` by ALPN).
    ///
    /// Every request for `path` is recorded in ``requests`` like any other. A `GET` with a valid upgrade
    /// (`Upgrade: websocket`, `Connection: Upgrade`, a 16-byte base64 `Sec-WebSocket-Key`,
    /// `Sec-WebSocket-Version: 13`) is answered `101 Switching Protocols` with the matching `Sec-WebSocket-Accept`
    /// (unless ``MockWebSocketEndpoint/handshake`` breaks it), and the connection then speaks WebSocket frames as
    /// ``MockWebSocketEndpoint/behaviour`` says. Other requests for `path` get `400 Bad Request`, or
    /// `426 Upgrade Required` with `Sec-WebSocket-Version: 13` for a `GET` over HTTP/1.1 whose `Sec-WebSocket-Version`
    /// is missing or not 13 (a ``MockWebSocketEndpoint/HandshakeOverride/response(_:)`` answers them all instead, and an
    /// endpoint ``MockWebSocketEndpoint/requiringCredentials(user:password:realm:authentication:)`` answers a request
    /// without them with `401` first).
    /// After any answer but `101` an HTTP/1.1 connection closes (an HTTP/2 one goes on). Extensions
    /// (`Sec-WebSocket-Extensions`) are never accepted.
    ///
    /// The server's frames are unmasked; it requires masked frames from the client and fails the connection with close
    /// code 1002 otherwise (and for reserved bits or opcodes, misplaced continuations, fragmented or oversized control
    /// frames, invalid close codes), with 1007 for a text message or close reason that is not UTF-8, and with 1009 for a
    /// frame or message over 64 MiB. After a close frame of its own it waits up to ten seconds for the client's
    /// before closing the TCP connection.
    ///
    /// A WebSocket route wins over ``route(_:method:response:)`` routes for the same path; a later registration for the
    /// same path replaces this one.
    ///
    /// - Parameters:
    ///   - path: The path to match, e.g. `/socket`.
    ///   - endpoint: What the endpoint does (default: echo).
    public func webSocket(_ path: String, endpoint: MockWebSocketEndpoint = .echo) {
        state.webSockets.setEndpoint(endpoint, path: path)
    }

    /// What the WebSocket connections to `path` received so far — messages, pings, pongs and close frames — in the
    /// order they arrived (across connections). Poll it to wait for something (see
    /// ``waitForWebSocketMessages(path:count:timeout:)``).
    public func webSocketMessages(path: String) -> [RecordedWebSocketMessage] {
        state.webSockets.messages(path: path)
    }

    /// Waits until the WebSocket connections to `path` have received at least `count` messages and control frames
    /// (as ``webSocketMessages(path:)`` counts them), or until `timeout` passes (30 s by default: generous, for a
    /// loaded machine, and the wait ends as soon as the messages are there), polling every 10 ms.
    ///
    /// - Returns: ``webSocketMessages(path:)`` at that moment: fewer than `count` when the time ran out.
    public func waitForWebSocketMessages(
        path: String,
        count: Int,
        timeout: Duration = .seconds(30)
    ) async -> [RecordedWebSocketMessage] {
        let deadline = ContinuousClock.now + timeout
        while true {
            let messages = webSocketMessages(path: path)
            guard messages.count < count, ContinuousClock.now < deadline,
                (try? await Task.sleep(for: .milliseconds(10))) != nil
            else {
                return messages
            }
        }
    }

    /// Forgets the WebSocket messages received so far, on every path.
    public func clearWebSocketMessages() {
        state.webSockets.clearMessages()
    }
}
