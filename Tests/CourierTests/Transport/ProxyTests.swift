import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import NIOConcurrencyHelpers
import Testing

/// Answers proxy challenges with a fixed credential and records them.
private final class ProxyCredentialDelegate: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    let spaces = NIOLockedValueBox<[URLProtectionSpace]>([])

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        let space = challenge.protectionSpace
        guard space.authenticationMethod != NSURLAuthenticationMethodServerTrust else {
            return completionHandler(.performDefaultHandling, nil)
        }
        spaces.withLockedValue { $0.append(space) }
        completionHandler(.useCredential, URLCredential(user: "proxyuser", password: "s3cret", persistence: .none))
    }
}

/// Requests through an HTTP proxy (`MockProxy`) to loopback origins.
@Suite("Proxies")
struct ProxyTests {
    private func withProxy(
        credentials: (user: String, password: String)? = nil, _ body: (MockProxy) async throws -> Void
    ) async throws {
        let proxy = MockProxy(requiredCredentials: credentials)
        try await proxy.start()
        do {
            try await body(proxy)
            try await proxy.shutdown()
        } catch {
            try? await proxy.shutdown()
            throw error
        }
    }

    private func settings(_ proxy: MockProxy) -> [String: any Sendable] {
        [
            "HTTPEnable": 1, "HTTPProxy": "127.0.0.1", "HTTPPort": proxy.port,
            "HTTPSEnable": 1, "HTTPSProxy": "127.0.0.1", "HTTPSPort": proxy.port,
        ]
    }

    @Test func anHTTPRequestGoesToTheProxyInAbsoluteForm() async throws {
        try await withProxy { proxy in
            try await withServer { origin in
                origin.route("/p", response: .ok("via proxy"))
                let session = makeSession { $0.connectionProxyDictionary = settings(proxy) }
                defer { session.finishTasksAndInvalidate() }
                let outcome = await session.runDataTask(origin.url("/p?x=1"))
                #expect(outcome.error == nil)
                #expect(outcome.data == Data("via proxy".utf8))
                let seen = try #require(proxy.requests.first)
                #expect(seen.method == "GET" && seen.target == origin.url("/p?x=1").absoluteString)
                #expect(origin.requests(path: "/p").first?.target == "/p?x=1")
                #expect(origin.requests(path: "/p").first?.header("Host") == "127.0.0.1:\(origin.port)")
            }
        }
    }

    @Test func anHTTPSRequestGoesThroughATunnelWithTheOriginsTrust() async throws {
        try await withProxy { proxy in
            try await withServer(.https) { origin in
                origin.route("/s", response: .ok("tunnelled"))
                let session = makeSession {
                    $0.connectionProxyDictionary = settings(proxy)
                    $0.courierAdditionalTrustedCertificates = [Data(origin.certificateDER)]
                }
                defer { session.finishTasksAndInvalidate() }
                let first = await session.runDataTask(origin.url("/s"))
                let second = await session.runDataTask(origin.url("/s"))
                #expect(first.error == nil && second.error == nil)
                #expect(first.data == Data("tunnelled".utf8))
                // One tunnel, kept alive for the second request.
                #expect(proxy.requests.map(\.method) == ["CONNECT"])
                #expect(proxy.requests.first?.target == "127.0.0.1:\(origin.port)")
                let served = origin.requests(path: "/s")
                #expect(served.count == 2 && served[0].connectionID == served[1].connectionID)
            }
        }
    }

    @Test func http2RunsInsideTheTunnel() async throws {
        try await withProxy { proxy in
            try await withServer(.h2) { origin in
                origin.route("/s", response: .ok("h2 through the tunnel"))
                let session = makeSession { $0.connectionProxyDictionary = settings(proxy) }
                defer { session.finishTasksAndInvalidate() }
                let outcomes = await withTaskGroup(of: DataOutcome.self) { group in
                    for _ in 0..<4 { group.addTask { await session.runDataTask(origin.url("/s")) } }
                    return await group.reduce(into: []) { $0.append($1) }
                }
                #expect(outcomes.allSatisfy { $0.data == Data("h2 through the tunnel".utf8) })
                let served = origin.requests(path: "/s")
                #expect(served.allSatisfy { $0.protocolName == "h2" })
                #expect(proxy.requests.allSatisfy { $0.method == "CONNECT" })
                // Each tunnel carries one HTTP/2 connection; the origin sees as many connections as tunnels.
                #expect(Set(served.map(\.connectionID)).count == proxy.requests.count)
            }
        }
    }

    @Test(arguments: [false, true])
    func aProxyChallengeIsAnsweredOnlyToTheProxy(https: Bool) async throws {
        try await withProxy(credentials: ("proxyuser", "s3cret")) { proxy in
            try await withServer(https ? .https : .http) { origin in
                origin.route("/a", response: .ok("authorized"))
                let delegate = ProxyCredentialDelegate()
                let session = makeSession(delegate: delegate) {
                    $0.connectionProxyDictionary = settings(proxy)
                    $0.courierAdditionalTrustedCertificates = [Data(origin.certificateDER)]
                }
                defer { session.finishTasksAndInvalidate() }
                let outcome = await session.runDataTask(origin.url("/a"))
                #expect(outcome.error == nil)
                #expect(outcome.data == Data("authorized".utf8))
                let space = try #require(delegate.spaces.withLockedValue { $0 }.first)
                #expect(space.isProxy())
                #expect(space.host == "127.0.0.1" && space.port == proxy.port)
                #expect(space.proxyType == (https ? NSURLProtectionSpaceHTTPSProxy : NSURLProtectionSpaceHTTPProxy))
                // The Basic answer reaches the proxy in the clear, in the CONNECT too.
                #expect(!space.receivesCredentialSecurely)
                #expect(proxy.requests.map(\.answeredStatus).first == 407)
                #expect(proxy.requests.last?.header("Proxy-Authorization") != nil)
                // The origin never sees the proxy's credentials.
                #expect(origin.requests.allSatisfy { $0.header("Proxy-Authorization") == nil })
            }
        }
    }

    /// The user and password in a request's URL are the origin's. A proxy's 407 is never answered with them (Darwin
    /// and curl take a proxy's credentials from the proxy's settings only): without a delegate the 407 is the
    /// response, and the proxy never sees them — for `https`, they would otherwise leave the tunnel they belong in.
    @Test(arguments: [false, true])
    func theURLsCredentialsAreNeverOfferedToTheProxy(https: Bool) async throws {
        try await withProxy(credentials: ("alice", "origin-secret")) { proxy in
            try await withServer(https ? .https : .http) { origin in
                origin.route("/u", response: .ok("reached"))
                let session = makeSession {
                    $0.connectionProxyDictionary = settings(proxy)
                    $0.courierAdditionalTrustedCertificates = [Data(origin.certificateDER)]
                }
                defer { session.finishTasksAndInvalidate() }
                var components = try #require(URLComponents(url: origin.url("/u"), resolvingAgainstBaseURL: false))
                components.user = "alice"
                components.password = "origin-secret"
                let url = try #require(components.url)
                let outcome = await session.runDataTask(url)
                #expect(outcome.error == nil)
                #expect(outcome.http?.statusCode == 407)
                #expect(!proxy.requests.isEmpty)
                #expect(proxy.requests.allSatisfy { $0.header("Proxy-Authorization") == nil })
                #expect(origin.requests.isEmpty)
            }
        }
    }

    @Test func metricsSayTheConnectionWasAProxys() async throws {
        try await withProxy { proxy in
            try await withServer { origin in
                origin.route("/m", response: .ok("m"))
                let session = makeSession { $0.connectionProxyDictionary = settings(proxy) }
                defer { session.finishTasksAndInvalidate() }
                final class Collector: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
                    let metrics = NIOLockedValueBox<URLSessionTaskMetrics?>(nil)
                    func urlSession(
                        _ session: URLSession, task: URLSessionTask, didFinishCollecting metrics: URLSessionTaskMetrics
                    ) { self.metrics.withLockedValue { $0 = metrics } }
                }
                let collector = Collector()
                _ = try await session.data(from: origin.url("/m"), delegate: collector)
                let transaction = try #require(collector.metrics.withLockedValue { $0 }?.transactionMetrics.first)
                #expect(transaction.isProxyConnection)
                #expect(transaction.remotePort == proxy.port)
            }
        }
    }

    @Test func exceptionsGoDirect() async throws {
        try await withProxy { proxy in
            try await withServer { origin in
                origin.route("/d", response: .ok("direct"))
                var dictionary = settings(proxy)
                dictionary["ExceptionsList"] = ["127.0.0.0/8"]
                let session = makeSession { $0.connectionProxyDictionary = dictionary }
                defer { session.finishTasksAndInvalidate() }
                let outcome = await session.runDataTask(origin.url("/d"))
                #expect(outcome.data == Data("direct".utf8))
                #expect(proxy.requests.isEmpty)
            }
        }
    }

    @Test(arguments: [false, true])
    func socksCarriesBothSchemesWithAndWithoutCredentials(credentials: Bool) async throws {
        let socks = MockSOCKSProxy(requiredCredentials: credentials ? ("sock", "pw") : nil)
        try await socks.start()
        defer { Task { try? await socks.shutdown() } }
        try await withServer { plain in
            try await withServer(.https) { secure in
                plain.route("/plain", response: .ok("plain via socks"))
                secure.route("/secure", response: .ok("secure via socks"))
                var dictionary: [String: any Sendable] = [
                    "SOCKSEnable": 1, "SOCKSProxy": "127.0.0.1", "SOCKSPort": socks.port,
                ]
                if credentials {
                    dictionary["kCFStreamPropertySOCKSUser"] = "sock"
                    dictionary["kCFStreamPropertySOCKSPassword"] = "pw"
                }
                let session = makeSession {
                    $0.connectionProxyDictionary = dictionary
                    $0.courierAdditionalTrustedCertificates = [Data(secure.certificateDER)]
                }
                defer { session.finishTasksAndInvalidate() }
                let first = await session.runDataTask(plain.url("/plain"))
                let second = await session.runDataTask(secure.url("/secure"))
                #expect(first.data == Data("plain via socks".utf8))
                #expect(second.data == Data("secure via socks".utf8))
                // Origin form: the SOCKS proxy only connected.
                #expect(plain.requests(path: "/plain").first?.target == "/plain")
                #expect(socks.requests.map(\.target) == ["127.0.0.1:\(plain.port)", "127.0.0.1:\(secure.port)"])
                #expect(socks.requests.allSatisfy { $0.user == (credentials ? "sock" : nil) })
            }
        }
    }

    @Test func socksWithoutTheCredentialsItWantsFailsClearly() async throws {
        let socks = MockSOCKSProxy(requiredCredentials: ("sock", "pw"))
        try await socks.start()
        defer { Task { try? await socks.shutdown() } }
        try await withServer { origin in
            origin.route("/x", response: .ok("x"))
            let session = makeSession {
                $0.connectionProxyDictionary = ["SOCKSEnable": 1, "SOCKSProxy": "127.0.0.1", "SOCKSPort": socks.port]
            }
            defer { session.finishTasksAndInvalidate() }
            let outcome = await session.runDataTask(origin.url("/x"))
            #expect(outcome.urlError?.code == .userAuthenticationRequired)
            #expect(origin.requests.isEmpty)
        }
    }

    /// A proxy credential that got a request through to an origin that redirected it to another origin still works:
    /// the cross-origin hop takes `Proxy-Authorization` off the followed request, and the proxy's `407` to it is a
    /// first challenge, not a failure of the credential. Default handling answers it with the stored credential (it
    /// delivered the `407`), and a delegate is asked with `previousFailureCount` 0 (it was 1, which the usual
    /// `previousFailureCount > 0` check takes for a wrong password and cancels).
    @Test(arguments: [false, true])
    func aProxyCredentialStillWorksAfterACrossOriginRedirect(askingADelegate: Bool) async throws {
        try await withProxy(credentials: ("proxyuser", "s3cret")) { proxy in
            try await withServer { target in
                target.route("/landing", response: .ok("landed"))
                let landing = target.url("/landing").absoluteString
                try await withServer { origin in
                    origin.route("/start", response: MockResponse(status: 302, headers: [("Location", landing)]))
                    let credential = URLCredential(user: "proxyuser", password: "s3cret", persistence: .forSession)
                    let delegate = ChallengeAnsweringDelegate([
                        (.useCredential, credential), (.useCredential, credential),
                    ])
                    let session = makeSession(delegate: askingADelegate ? delegate : nil) {
                        $0.connectionProxyDictionary = settings(proxy)
                    }
                    defer { session.finishTasksAndInvalidate() }
                    if !askingADelegate {
                        let space = URLProtectionSpace(
                            proxyHost: "127.0.0.1", port: proxy.port, type: NSURLProtectionSpaceHTTPProxy,
                            realm: "mock proxy", authenticationMethod: NSURLAuthenticationMethodHTTPBasic)
                        session.configuration.urlCredentialStorage?.setDefaultCredential(credential, for: space)
                    }
                    let outcome = await session.runDataTask(origin.url("/start"))
                    #expect(outcome.error == nil)
                    #expect(outcome.http?.statusCode == 200)
                    #expect(outcome.data == Data("landed".utf8))
                    if askingADelegate {
                        let counts = delegate.challenges.withLockedValue { $0.map(\.previousFailureCount) }
                        #expect(counts == [0, 0])
                    }
                    #expect(target.requests.allSatisfy { $0.header("Proxy-Authorization") == nil })
                }
            }
        }
    }
}
