import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import NIOConcurrencyHelpers
import Testing

/// A WebSocket delegate that also answers the task's authentication challenges: server trust by trusting, password
/// challenges (server or proxy) with `password`, client-certificate challenges with `identity`; it records the
/// challenges' authentication methods and whether they came from a proxy.
private final class HandshakeChallengeDelegate: NSObject, URLSessionWebSocketDelegate, @unchecked Sendable {
    let password: URLCredential?
    let identity: SecIdentity?
    private let seen = NIOLockedValueBox<[(method: String, isProxy: Bool)]>([])
    private let opened = NIOLockedValueBox<[String?]>([])

    init(password: URLCredential? = nil, identity: SecIdentity? = nil) {
        self.password = password
        self.identity = identity
    }

    var challenges: [(method: String, isProxy: Bool)] { seen.withLockedValue { $0 } }
    var openedProtocols: [String?] { opened.withLockedValue { $0 } }

    func urlSession(
        _ session: URLSession, webSocketTask: URLSessionWebSocketTask, didOpenWithProtocol protocol: String?
    ) {
        opened.withLockedValue { $0.append(`protocol`) }
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        let space = challenge.protectionSpace
        if let trust = space.serverTrust {
            return completionHandler(.useCredential, URLCredential(trust: trust))
        }
        seen.withLockedValue { $0.append((space.authenticationMethod, space.isProxy())) }
        if space.authenticationMethod == NSURLAuthenticationMethodClientCertificate {
            guard let identity else { return completionHandler(.cancelAuthenticationChallenge, nil) }
            return completionHandler(
                .useCredential, URLCredential(identity: identity, certificates: nil, persistence: .none))
        }
        guard let password, challenge.previousFailureCount == 0 else {
            return completionHandler(.cancelAuthenticationChallenge, nil)
        }
        completionHandler(.useCredential, password)
    }
}

/// The opening handshake's paths through the session's stages and transport: cookies stored from the `101`,
/// an authentication challenge answered before the upgrade, proxies (a `CONNECT` tunnel for `ws` and `wss`, with
/// the proxy's own challenge) and client certificates on `wss`.
@Suite("WebSocket handshake paths")
struct WebSocketHandshakePathTests {
    /// Sends "hello" on `task` and expects it back.
    private func expectEcho(_ task: URLSessionWebSocketTask) async throws {
        try await task.send(.string("hello"))
        let reply = try await task.receive()
        guard case .string("hello") = reply else {
            Issue.record("no echo: \(reply)")
            return
        }
    }

    @Test func aCookieSetOnThe101IsStoredAndSentNextTime() async throws {
        try await withServer { server in
            server.webSocket(
                "/socket",
                endpoint: MockWebSocketEndpoint(extraResponseHeaders: [("Set-Cookie", "session=abc; Path=/")]))
            let session = makeSession()
            defer { session.invalidateAndCancel() }
            let url = try WebSocketTaskTests.webSocketURL(server, "/socket")
            let first = session.webSocketTask(with: url)
            first.resume()
            try await expectEcho(first)
            let stored = session.configuration.httpCookieStorage?.cookies(for: server.url("/socket")) ?? []
            #expect(stored.map { "\($0.name)=\($0.value)" } == ["session=abc"])
            first.cancel(with: .normalClosure, reason: nil)
            let second = session.webSocketTask(with: url)
            second.resume()
            try await expectEcho(second)
            let handshakes = server.requests(path: "/socket")
            #expect(handshakes.count == 2)
            #expect(handshakes.first?.header("Cookie") == nil)
            #expect(handshakes.last?.header("Cookie") == "session=abc")
            second.cancel(with: .normalClosure, reason: nil)
        }
    }

    @Test(arguments: [MockAuthentication.basic, .digest(.sha256)])
    func a401OnTheHandshakeIsAnsweredAndTheRetryOpens(authentication: MockAuthentication) async throws {
        try await withServer { server in
            server.webSocket(
                "/private",
                endpoint: MockWebSocketEndpoint.echo.requiringCredentials(
                    user: "ada", password: "l0vel4ce", authentication: authentication))
            let delegate = HandshakeChallengeDelegate(
                password: URLCredential(user: "ada", password: "l0vel4ce", persistence: .none))
            let session = makeSession(delegate: delegate)
            defer { session.invalidateAndCancel() }
            let task = session.webSocketTask(with: try WebSocketTaskTests.webSocketURL(server, "/private"))
            task.resume()
            try await expectEcho(task)
            let handshakes = server.requests(path: "/private")
            #expect(handshakes.count == 2)
            #expect(handshakes.first?.header("Authorization") == nil)
            #expect(handshakes.last?.header("Authorization") != nil)
            #expect(handshakes.last?.header("Sec-WebSocket-Key") != nil)
            let expectedMethod =
                authentication == .basic ? NSURLAuthenticationMethodHTTPBasic : NSURLAuthenticationMethodHTTPDigest
            #expect(delegate.challenges.map(\.method) == [expectedMethod])
            #expect(delegate.openedProtocols == [nil])
            task.cancel(with: .normalClosure, reason: nil)
        }
    }

    @Test func aRefusedChallengeEndsTheTaskWithoutOpening() async throws {
        try await withServer { server in
            server.webSocket(
                "/private", endpoint: MockWebSocketEndpoint.echo.requiringCredentials(user: "a", password: "b"))
            let delegate = HandshakeChallengeDelegate()
            let session = makeSession(delegate: delegate)
            defer { session.invalidateAndCancel() }
            let task = session.webSocketTask(with: try WebSocketTaskTests.webSocketURL(server, "/private"))
            task.resume()
            // Cancelling the challenge cancels the task, as on Darwin.
            let error = await #expect(throws: URLError.self) { try await task.receive() }
            #expect(error?.code == .cancelled)
            try await waitUntil { task.state == .completed }
            #expect((task.error as? URLError)?.code == .cancelled)
            #expect(delegate.openedProtocols.isEmpty)
            #expect(delegate.challenges.count == 1)
            #expect(server.requests(path: "/private").count == 1)
        }
    }

    /// A `ws` or `wss` URL through `proxy`, which requires `proxyCredentials` when set.
    private func openThroughProxy(
        _ scheme: MockServer.Scheme, proxyCredentials: (user: String, password: String)?,
        delegate: HandshakeChallengeDelegate
    ) async throws -> (proxyRequests: [(method: String, target: String)], originPath: String?) {
        let proxy = MockProxy(requiredCredentials: proxyCredentials)
        try await proxy.start()
        do {
            let seen = try await openThroughStartedProxy(proxy, scheme, delegate: delegate)
            try await proxy.shutdown()
            return seen
        } catch {
            try? await proxy.shutdown()
            throw error
        }
    }

    private func openThroughStartedProxy(
        _ proxy: MockProxy, _ scheme: MockServer.Scheme, delegate: HandshakeChallengeDelegate
    ) async throws -> (proxyRequests: [(method: String, target: String)], originPath: String?) {
        try await withServer(scheme, tlsIdentity: scheme == .http ? nil : SharedTestTLS.serverIdentity) {
            origin in
            origin.webSocket("/socket", endpoint: .echo)
            let session = makeSession(delegate: delegate) {
                $0.connectionProxyDictionary = [
                    "HTTPEnable": 1, "HTTPProxy": "127.0.0.1", "HTTPPort": proxy.port,
                    "HTTPSEnable": 1, "HTTPSProxy": "127.0.0.1", "HTTPSPort": proxy.port,
                ]
            }
            defer { session.invalidateAndCancel() }
            let task = session.webSocketTask(with: try WebSocketTaskTests.webSocketURL(origin, "/socket"))
            task.resume()
            try await expectEcho(task)
            task.cancel(with: .normalClosure, reason: nil)
            return (proxy.requests.map { ($0.method, $0.target) }, origin.requests(path: "/socket").first?.target)
        }
    }

    @Test(arguments: [MockServer.Scheme.http, .https])
    func throughAnHTTPProxyTheHandshakeGoesThroughATunnel(scheme: MockServer.Scheme) async throws {
        let delegate = HandshakeChallengeDelegate()
        let seen = try await openThroughProxy(scheme, proxyCredentials: nil, delegate: delegate)
        // Proxies do not forward an upgrade sent to them in absolute form; a tunnel carries the handshake untouched.
        #expect(seen.proxyRequests.map(\.method) == ["CONNECT"])
        #expect(seen.proxyRequests.first?.target.hasPrefix("127.0.0.1:") == true)
        #expect(seen.originPath == "/socket")
        #expect(delegate.openedProtocols == [nil])
    }

    @Test func aProxyThatAsksForCredentialsGetsThemAndTheTunnelOpens() async throws {
        let delegate = HandshakeChallengeDelegate(
            password: URLCredential(user: "proxyuser", password: "s3cret", persistence: .none))
        let seen = try await openThroughProxy(
            .https, proxyCredentials: ("proxyuser", "s3cret"), delegate: delegate)
        #expect(seen.proxyRequests.map(\.method) == ["CONNECT", "CONNECT"])
        #expect(delegate.challenges.map(\.isProxy) == [true])
        #expect(delegate.openedProtocols == [nil])
    }

    @Test func wssPresentsTheClientCertificateTheServerRequires() async throws {
        let setup = try ClientCertificateTests.Setup()
        let client = try setup.clientCA.clientIdentity()
        try await withServer(.https, tlsIdentity: setup.serverIdentity) { server in
            server.webSocket("/socket", endpoint: .echo)
            let delegate = HandshakeChallengeDelegate(identity: client.identity)
            let session = setup.session(delegate: delegate)
            defer { session.invalidateAndCancel() }
            let task = session.webSocketTask(with: try WebSocketTaskTests.webSocketURL(server, "/socket"))
            task.resume()
            try await expectEcho(task)
            #expect(server.requests(path: "/socket").first?.clientCertificateDER == client.leafDER)
            #expect(delegate.challenges.map(\.method) == [NSURLAuthenticationMethodClientCertificate])
            task.cancel(with: .normalClosure, reason: nil)
        }
    }
}
