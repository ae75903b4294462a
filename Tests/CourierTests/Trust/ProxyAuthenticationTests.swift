import CourierHTTP
import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

@testable import Courier

/// 407 challenges: the same machinery as 401s, with a proxy protection space and `Proxy-Authorization`. These
/// sessions have no proxy, so the server that answers 407 is the one the request was sent to (`ProxyTests` go
/// through a real one).
@Suite("Proxy authentication")
struct ProxyAuthenticationTests {
    static let right = URLCredential(user: "bob", password: "proxy pass", persistence: .forSession)

    private func field(_ name: String, of request: RecordedRequest?) -> String? {
        request?.header(name)
    }

    @Test(arguments: [MockAuthentication.basic, .digest(.sha256), .digest(.md5)])
    func aProxyChallengeGoesToTheDelegateWithAProxySpace(_ authentication: MockAuthentication) async throws {
        try await withServer { server in
            server.protect(
                "/p", user: "bob", password: "proxy pass", realm: "gate", authentication: authentication,
                asProxy: true, response: .ok("through"))
            let delegate = ChallengeAnsweringDelegate([(.useCredential, Self.right)])
            let session = makeSession(delegate: delegate)
            let outcome = await session.runDataTask(server.url("/p"))
            #expect(outcome.error == nil)
            #expect(outcome.data == Data("through".utf8))
            let challenge = try #require(delegate.challenges.withLockedValue { $0 }.first)
            let space = challenge.protectionSpace
            #expect(space.isProxy() && space.proxyType == NSURLProtectionSpaceHTTPProxy)
            #expect(space.host == "127.0.0.1" && space.port == server.port && space.realm == "gate")
            let method =
                authentication == .basic ? NSURLAuthenticationMethodHTTPBasic : NSURLAuthenticationMethodHTTPDigest
            #expect(space.authenticationMethod == method)
            #expect((challenge.failureResponse as? HTTPURLResponse)?.statusCode == 407)
            let last = server.requests.last
            #expect(field("Proxy-Authorization", of: last) != nil && field("Authorization", of: last) == nil)
            // Stored for the proxy's space, not the origin's.
            let storage = try #require(session.configuration.urlCredentialStorage)
            let stored = storage.allCredentials.first { $0.key.isProxy() }
            #expect(stored?.value["bob"]?.password == "proxy pass")
            #expect(!storage.allCredentials.contains { !$0.key.isProxy() })
            session.invalidateAndCancel()
        }
    }

    @Test func cancellingFailsAndDefaultHandlingDeliversThe407OrUsesTheStoredCredential() async throws {
        try await withServer { server in
            server.protect(
                "/p", user: "bob", password: "proxy pass", realm: "gate", asProxy: true, response: .ok("through"))
            let cancelling = makeSession(delegate: ChallengeAnsweringDelegate([(.cancelAuthenticationChallenge, nil)]))
            #expect(await cancelling.runDataTask(server.url("/p")).urlError?.code == .cancelled)
            cancelling.invalidateAndCancel()

            let plain = makeSession()
            let refused = await plain.runDataTask(server.url("/p"))
            #expect(refused.error == nil && refused.http?.statusCode == 407)
            let space = URLProtectionSpace(
                proxyHost: "127.0.0.1", port: server.port, type: NSURLProtectionSpaceHTTPProxy, realm: "gate",
                authenticationMethod: NSURLAuthenticationMethodHTTPBasic)
            plain.configuration.urlCredentialStorage?.setDefaultCredential(Self.right, for: space)
            #expect(await plain.runDataTask(server.url("/p")).data == Data("through".utf8))
            plain.invalidateAndCancel()
        }
    }

    /// A proxy that asks, then the server behind it: two challenges, both answers sent on the last request, and the
    /// proxy credential stored once the server's own challenge showed it worked.
    @Test func aProxyChallengeThenAServerChallenge() async throws {
        try await withServer { server in
            let proxyAnswer = "Basic " + Data("bob:proxy pass".utf8).base64EncodedString()
            let serverAnswer = "Basic " + Data("alice:wonder land".utf8).base64EncodedString()
            server.route("/both") { request in
                guard request.header("Proxy-Authorization") == proxyAnswer else {
                    return MockResponse(status: 407, headers: [("Proxy-Authenticate", "Basic realm=\"gate\"")])
                }
                guard request.header("Authorization") == serverAnswer else {
                    return MockResponse(status: 401, headers: [("WWW-Authenticate", "Basic realm=\"vault\"")])
                }
                return .ok("both")
            }
            let delegate = ChallengeAnsweringDelegate([
                (.useCredential, Self.right),
                (.useCredential, URLCredential(user: "alice", password: "wonder land", persistence: .forSession)),
            ])
            let session = makeSession(delegate: delegate)
            #expect(await session.runDataTask(server.url("/both")).data == Data("both".utf8))
            #expect(delegate.challenges.withLockedValue { $0.map { $0.protectionSpace.isProxy() } } == [true, false])
            #expect(server.requests.count == 3)
            let stored = try #require(session.configuration.urlCredentialStorage).allCredentials
            #expect(stored.count == 2)
            session.invalidateAndCancel()
        }
    }

    /// A proxy's Digest challenge to the `CONNECT` of an `https` request's tunnel is answered for that `CONNECT`:
    /// RFC 7616 §3.4.1 computes A2 from the method and request-target of the message carrying the answer, and the
    /// proxy computes it from `CONNECT origin:443` — an answer computed for `GET /path` never matched. A plain
    /// `http` request carries the answer itself.
    @Test func aProxysDigestAnswerForATunnelCoversTheConnect() throws {
        let challenge = try #require(
            AuthenticationChallengeParser.parse(["Digest realm=\"gate\", nonce=\"n0nce\", algorithm=MD5"]).first)
        let digest = try #require(DigestAuthentication(challenge))
        let proxy = ProxyServer(kind: .http, host: "proxy.example", port: 3128)
        let rules = ProxyRules(http: proxy, https: proxy)
        let secure = URLRequest(url: try #require(URL(string: "https://origin.example/files?x=1")))
        let target = try #require(AuthenticationStage.proxyDigestTarget(for: secure, rules: rules))
        #expect(target.method == "CONNECT" && target.uri == "origin.example:443")
        let authorized = try #require(
            AuthenticationStage.authorize(
                secure, challenge: challenge, credential: Self.right, state: AuthenticationState(), isProxy: true,
                digestTarget: target))
        // Without qop the answer has no client nonce: it is the same string every time.
        let expected = digest.authorizationValue(
            user: "bob", password: "proxy pass", method: "CONNECT", uri: "origin.example:443", nonceCount: 1,
            clientNonce: "")
        #expect(authorized.value(forHTTPHeaderField: "Proxy-Authorization") == expected)
        let plain = URLRequest(url: try #require(URL(string: "http://origin.example/files")))
        #expect(AuthenticationStage.proxyDigestTarget(for: plain, rules: rules) == nil)
        #expect(AuthenticationStage.proxyDigestTarget(for: secure, rules: ProxyRules()) == nil)
        // A WebSocket handshake runs on an `http` URL and is tunnelled too; an IPv6 origin is bracketed as on the
        // CONNECT line.
        let handshake = URLRequest(url: try #require(URL(string: "http://[::1]:8080/socket")))
        let tunnelled = AuthenticationStage.proxyDigestTarget(for: handshake, rules: rules, isWebSocket: true)
        #expect(tunnelled?.method == "CONNECT" && tunnelled?.uri == "[::1]:8080")
    }

    /// Answers to a proxy's and a server's challenges, sent again on the same origin's redirect, never reach another
    /// origin.
    @Test func credentialsNeverFollowACrossOriginRedirect() async throws {
        try await withServer { elsewhere in
            elsewhere.route("/landing", response: .ok("landed"))
            try await withServer { server in
                let proxyAnswer = "Basic " + Data("bob:proxy pass".utf8).base64EncodedString()
                let serverAnswer = "Basic " + Data("alice:wonder land".utf8).base64EncodedString()
                let target = elsewhere.url("/landing").absoluteString
                server.route("/start") { request in
                    guard request.header("Proxy-Authorization") == proxyAnswer else {
                        return MockResponse(status: 407, headers: [("Proxy-Authenticate", "Basic realm=\"gate\"")])
                    }
                    guard request.header("Authorization") == serverAnswer else {
                        return MockResponse(status: 401, headers: [("WWW-Authenticate", "Basic realm=\"vault\"")])
                    }
                    return MockResponse(status: 302, headers: [("Location", target)])
                }
                let delegate = ChallengeAnsweringDelegate([
                    (.useCredential, Self.right),
                    (.useCredential, URLCredential(user: "alice", password: "wonder land", persistence: .none)),
                ])
                let session = makeSession(delegate: delegate)
                #expect(await session.runDataTask(server.url("/start")).data == Data("landed".utf8))
                let landed = try #require(elsewhere.requests.last)
                #expect(landed.header("Authorization") == nil && landed.header("Proxy-Authorization") == nil)
                session.invalidateAndCancel()
            }
        }
    }
}
