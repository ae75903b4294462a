/// What a ``MockServer`` WebSocket route (``MockServer/webSocket(_:endpoint:)``) does: the subprotocols it speaks,
/// how it behaves once connected, and optionally how it breaks the opening handshake.
///
/// ```swift
/// server.webSocket("/chat", endpoint: MockWebSocketEndpoint(subprotocols: ["chat.v2"]))  // echoes
/// server.webSocket("/feed", endpoint: .script(.send(text: "hello"), .expectMessage, .close(code: 4000, reason: "bye")))
/// ```
public struct MockWebSocketEndpoint: Sendable {
    /// How the endpoint behaves after the opening handshake.
    public enum Behaviour: Sendable {
        /// Sends every text or binary message back as it came (text as text, binary as binary), reading no further
        /// while the client is not taking the echoes; answers pings with pongs and a close frame with a close frame
        /// echoing its code and reason.
        case echo
        /// Runs the steps in order; see ``MockWebSocketStep``.
        case script([MockWebSocketStep])
    }

    /// A deliberately broken opening handshake.
    public enum HandshakeOverride: Sendable {
        /// Answers the upgrade request with this response instead of `101` (e.g. `200`, `401` with
        /// `WWW-Authenticate`, a `302` with `Location`), then closes the connection: the HTTP/1.1 parser stops at an
        /// upgrade request, so nothing more can be read on it.
        case response(MockResponse)
        /// Answers `101` with a `Sec-WebSocket-Accept` that does not match the request's key.
        case badAccept
        /// Answers `101` without the `Upgrade: websocket` header field.
        case missingUpgradeHeader
        /// Answers `101` selecting this subprotocol, whatever the client offered.
        case unrequestedSubprotocol(String)
    }

    /// The subprotocols the endpoint speaks. The first protocol in the client's `Sec-WebSocket-Protocol` offer that is
    /// in this list is selected and echoed in the `101`; when none is, the `101` has no `Sec-WebSocket-Protocol`.
    public var subprotocols: [String]
    /// What the endpoint does once connected.
    public var behaviour: Behaviour
    /// A broken handshake to answer with, or `nil` for a correct one.
    public var handshake: HandshakeOverride?
    /// Header fields added, in order and as given, to the `101` response (e.g. `Set-Cookie`).
    public var extraResponseHeaders: [(name: String, value: String)]
    /// How long the endpoint waits for the client's close frame after sending its own (a script's
    /// ``MockWebSocketStep/close(code:reason:)`` or a protocol failure) before it closes the connection. 10 s by
    /// default; a test of the timeout shortens it, and a test on a busy machine that needs the client's answer
    /// recorded lengthens it.
    public var closeTimeout: Duration = .seconds(10)
    /// The credentials an upgrade request must carry (see ``requiringCredentials(user:password:realm:authentication:)``).
    var credentialCheck: ProtectedRouteCheck?

    /// Creates an endpoint.
    ///
    /// - Parameters:
    ///   - subprotocols: The subprotocols the endpoint speaks, in no particular order.
    ///   - behaviour: What it does once connected (default: echo).
    ///   - handshake: A broken handshake to answer with, or `nil`.
    ///   - extraResponseHeaders: Header fields added to the `101` response.
    public init(
        subprotocols: [String] = [],
        behaviour: Behaviour = .echo,
        handshake: HandshakeOverride? = nil,
        extraResponseHeaders: [(name: String, value: String)] = []
    ) {
        self.subprotocols = subprotocols
        self.behaviour = behaviour
        self.handshake = handshake
        self.extraResponseHeaders = extraResponseHeaders
    }

    /// This endpoint, answering upgrade requests that do not authenticate as `user` with `password` with a `401` and a
    /// `WWW-Authenticate` challenge for `realm` (and then closing the connection), as
    /// ``MockServer/protect(_:method:user:password:realm:authentication:asProxy:response:)`` does for other routes.
    ///
    /// - Parameters:
    ///   - user: The user name that is let through.
    ///   - password: Its password.
    ///   - realm: The realm named in the challenge.
    ///   - authentication: Basic (the default) or Digest.
    public func requiringCredentials(
        user: String,
        password: String,
        realm: String = "mock",
        authentication: MockAuthentication = .basic
    ) -> MockWebSocketEndpoint {
        var endpoint = self
        endpoint.credentialCheck = ProtectedRouteCheck(
            user: user, password: password, realm: realm, authentication: authentication, asProxy: false)
        return endpoint
    }

    /// An endpoint that echoes, with no subprotocols.
    public static var echo: MockWebSocketEndpoint {
        MockWebSocketEndpoint()
    }

    /// An endpoint that runs `steps`, with no subprotocols.
    public static func script(_ steps: MockWebSocketStep...) -> MockWebSocketEndpoint {
        MockWebSocketEndpoint(behaviour: .script(steps))
    }
}
