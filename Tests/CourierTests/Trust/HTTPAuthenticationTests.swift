import CourierMockServer
import CourierTestSupport
import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import Courier

/// A task delegate that answers HTTP authentication challenges from a script, one answer per challenge, and records
/// the challenges. Server-trust challenges, which come to this method too when the session delegate has no
/// session-level one (as on Darwin), get default handling and are not recorded.
final class ChallengeAnsweringDelegate: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    let answers: NIOLockedValueBox<[(URLSession.AuthChallengeDisposition, URLCredential?)]>
    let challenges = NIOLockedValueBox<[URLAuthenticationChallenge]>([])

    init(_ answers: [(URLSession.AuthChallengeDisposition, URLCredential?)]) {
        self.answers = NIOLockedValueBox(answers)
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        guard challenge.protectionSpace.authenticationMethod != NSURLAuthenticationMethodServerTrust else {
            return completionHandler(.performDefaultHandling, nil)
        }
        challenges.withLockedValue { $0.append(challenge) }
        let answer = answers.withLockedValue { $0.isEmpty ? (.cancelAuthenticationChallenge, nil) : $0.removeFirst() }
        completionHandler(answer.0, answer.1)
    }
}

@Suite("HTTP authentication")
struct HTTPAuthenticationTests {
    static let right = URLCredential(user: "alice", password: "wonder land", persistence: .forSession)
    static let wrong = URLCredential(user: "alice", password: "guess", persistence: .forSession)

    /// `/private` wants Basic alice / "wonder land" in realm "vault"; anything else is a 401 with a body.
    private func protect(_ server: MockServer) {
        let expected = "Basic " + Data("alice:wonder land".utf8).base64EncodedString()
        server.route("/private") { request in
            if request.headers.contains(where: { $0.name.lowercased() == "authorization" && $0.value == expected }) {
                return .ok("secret")
            }
            return MockResponse(
                status: 401,
                headers: [("WWW-Authenticate", "Newauth realm=\"x\", Basic realm=\"vault\", charset=\"UTF-8\"")],
                body: .data(Data("denied".utf8)))
        }
    }

    private func authorizations(_ server: MockServer) -> [String?] {
        server.requests.map { request in request.headers.first { $0.name.lowercased() == "authorization" }?.value }
    }

    @Test(arguments: WireProtocol.allCases)
    func theDelegateIsAskedAndItsCredentialIsSent(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            protect(server)
            let delegate = ChallengeAnsweringDelegate([(.useCredential, Self.right)])
            let session = makeSession(delegate: delegate)
            let outcome = await session.runDataTask(server.url("/private"))
            #expect(outcome.data == Data("secret".utf8))
            let challenge = try #require(delegate.challenges.withLockedValue { $0 }.first)
            let space = challenge.protectionSpace
            #expect(space.authenticationMethod == NSURLAuthenticationMethodHTTPBasic)
            #expect(space.realm == "vault" && space.host == "127.0.0.1" && space.port == server.port)
            #expect(space.protocol == server.baseURL.scheme && !space.isProxy())
            #expect(challenge.previousFailureCount == 0 && challenge.proposedCredential == nil)
            #expect((challenge.failureResponse as? HTTPURLResponse)?.statusCode == 401)
            #expect(authorizations(server).count == 2)
            #expect(authorizations(server).first == .some(nil))
            // The 401's body was drained: the retry went over the same connection.
            #expect(server.connectionCount == 1)
            session.invalidateAndCancel()
        }
    }

    /// The credential an answer puts on the retry is sent, not shown: `currentRequest` keeps the app's own fields
    /// (a password given with persistence `.none` could otherwise be read back from the task, or land in resume data).
    @Test(arguments: WireProtocol.allCases)
    func theAnsweredCredentialStaysOutOfTheCurrentRequest(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            protect(server)
            let once = URLCredential(user: "alice", password: "wonder land", persistence: .none)
            let session = makeSession(delegate: ChallengeAnsweringDelegate([(.useCredential, once)]))
            defer { session.invalidateAndCancel() }
            var task: URLSessionDataTask?
            let outcome = await session.runDataTask(URLRequest(url: server.url("/private"))) { task = $0 }
            #expect(outcome.data == Data("secret".utf8))
            #expect((authorizations(server).last ?? nil)?.hasPrefix("Basic ") == true)
            let current = try #require(task?.currentRequest)
            #expect(current.url == server.url("/private"))
            #expect(current.value(forHTTPHeaderField: "Authorization") == nil)
        }
    }

    /// A field the app set itself comes back; one a redirect to another origin removed stays removed.
    @Test func answeredCredentialsAreReplacedByTheAppsOwnFields() throws {
        var mine = URLRequest(url: try #require(URL(string: "http://127.0.0.1/private")))
        mine.setValue("Bearer app", forHTTPHeaderField: "Authorization")
        var retry = mine
        retry.setValue("Basic YTpi", forHTTPHeaderField: "Authorization")
        retry.setValue("Basic cDpx", forHTTPHeaderField: "Proxy-Authorization")
        var answered = AnsweredCredentials()
        answered.record(from: mine, to: retry)
        var second = retry
        second.setValue("Basic YTpj", forHTTPHeaderField: "Authorization")
        answered.record(from: retry, to: second)

        let shown = answered.visible(second)
        #expect(shown.value(forHTTPHeaderField: "Authorization") == "Bearer app")
        #expect(shown.value(forHTTPHeaderField: "Proxy-Authorization") == nil)
        var redirected = second
        redirected.setValue(nil, forHTTPHeaderField: "Authorization")
        #expect(answered.visible(redirected).value(forHTTPHeaderField: "Authorization") == nil)
        #expect(answered.visible(mine) == mine)
    }

    @Test(arguments: WireProtocol.allCases)
    func aWrongCredentialDrawsTheNextChallengeWithItsFailureCount(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            protect(server)
            let delegate = ChallengeAnsweringDelegate([(.useCredential, Self.wrong), (.useCredential, Self.right)])
            let session = makeSession(delegate: delegate)
            #expect(await session.runDataTask(server.url("/private")).data == Data("secret".utf8))
            let challenges = delegate.challenges.withLockedValue { $0 }
            #expect(challenges.map(\.previousFailureCount) == [0, 1])
            #expect(challenges.last?.proposedCredential?.password == "guess")
            #expect(server.requests.count == 3)
            session.invalidateAndCancel()
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func cancellingFailsTheTask(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            protect(server)
            let session = makeSession(delegate: ChallengeAnsweringDelegate([(.cancelAuthenticationChallenge, nil)]))
            #expect(await session.runDataTask(server.url("/private")).urlError?.code == .cancelled)
            session.invalidateAndCancel()
        }
    }

    /// Default handling (no delegate, or its answer) uses the storage's default credential once; without one, or
    /// when it fails, the 401 is the response — never a loop or a hang.
    @Test(arguments: [false, true])
    func defaultHandlingUsesTheStorageOnceOrDeliversThe401(withDelegate: Bool) async throws {
        try await withServer { server in
            protect(server)
            let delegate = ChallengeAnsweringDelegate(Array(repeating: (.performDefaultHandling, nil), count: 10))
            let space = URLProtectionSpace(
                host: "127.0.0.1", port: server.port, protocol: "http", realm: "vault",
                authenticationMethod: NSURLAuthenticationMethodHTTPBasic)
            let empty = makeSession(delegate: withDelegate ? delegate : nil)
            let denied = await empty.runDataTask(server.url("/private"))
            #expect(denied.error == nil && (denied.response as? HTTPURLResponse)?.statusCode == 401)
            #expect(denied.data == Data("denied".utf8))
            empty.invalidateAndCancel()

            let stored = makeSession(delegate: withDelegate ? delegate : nil)
            stored.configuration.urlCredentialStorage?.setDefaultCredential(Self.right, for: space)
            #expect(await stored.runDataTask(server.url("/private")).data == Data("secret".utf8))
            stored.invalidateAndCancel()

            let wrongStored = makeSession(delegate: withDelegate ? delegate : nil)
            wrongStored.configuration.urlCredentialStorage?.setDefaultCredential(Self.wrong, for: space)
            let refused = await wrongStored.runDataTask(server.url("/private"))
            #expect((refused.response as? HTTPURLResponse)?.statusCode == 401)
            wrongStored.invalidateAndCancel()
        }
    }

    /// A Basic challenge without a realm (`WWW-Authenticate: Basic`) is in the realm named by the host, as on
    /// Darwin: the delegate sees that realm, and a credential stored for it answers the challenge.
    @Test func aBasicChallengeWithoutRealmIsInTheHostsRealm() async throws {
        try await withServer { server in
            let expected = "Basic " + Data("alice:wonder land".utf8).base64EncodedString()
            server.route("/bare") { request in
                if request.headers.contains(where: { $0.name.lowercased() == "authorization" && $0.value == expected })
                {
                    return .ok("secret")
                }
                return MockResponse(status: 401, headers: [("WWW-Authenticate", "Basic")])
            }
            let delegate = ChallengeAnsweringDelegate([(.useCredential, Self.right)])
            let asked = makeSession(delegate: delegate)
            #expect(await asked.runDataTask(server.url("/bare")).data == Data("secret".utf8))
            asked.invalidateAndCancel()
            let space = try #require(delegate.challenges.withLockedValue { $0.first?.protectionSpace })
            #expect(space.realm == "127.0.0.1" && space.authenticationMethod == NSURLAuthenticationMethodHTTPBasic)

            let stored = makeSession()
            stored.configuration.urlCredentialStorage?.setDefaultCredential(
                Self.right,
                for: URLProtectionSpace(
                    host: "127.0.0.1", port: server.port, protocol: "http", realm: "127.0.0.1",
                    authenticationMethod: NSURLAuthenticationMethodHTTPBasic))
            #expect(await stored.runDataTask(server.url("/bare")).data == Data("secret".utf8))
            stored.invalidateAndCancel()
        }
    }

    /// `/private` offers Basic, then `Newauth`, a scheme Courier does not know: rejecting Basic moves to it (as
    /// `NSURLAuthenticationMethodDefault`), and rejecting that too delivers the 401.
    @Test(arguments: WireProtocol.allCases)
    func rejectingEverySpaceDeliversThe401(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            protect(server)
            let delegate = ChallengeAnsweringDelegate([(.rejectProtectionSpace, nil), (.rejectProtectionSpace, nil)])
            let session = makeSession(delegate: delegate)
            let outcome = await session.runDataTask(server.url("/private"))
            #expect((outcome.response as? HTTPURLResponse)?.statusCode == 401)
            #expect(server.requests.count == 1)
            let spaces = delegate.challenges.withLockedValue { $0.map(\.protectionSpace) }
            #expect(
                spaces.map(\.authenticationMethod) == [
                    NSURLAuthenticationMethodHTTPBasic, NSURLAuthenticationMethodDefault,
                ])
            #expect(spaces.map(\.realm) == ["vault", "x"])
            session.invalidateAndCancel()
        }
    }

    /// A scheme Courier does not know reaches the delegate, which may cancel; a credential cannot answer it, and the
    /// password is not sent in another scheme: the 401 is the response.
    @Test(arguments: WireProtocol.allCases)
    func anUnknownSchemeIsAskedButNeverAnsweredWithThePassword(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            server.route("/bearer") { _ in
                MockResponse(
                    status: 401, headers: [("WWW-Authenticate", "Bearer realm=\"api\", error=\"invalid_token\"")])
            }
            let answering = ChallengeAnsweringDelegate([(.useCredential, Self.right)])
            let session = makeSession(delegate: answering)
            let outcome = await session.runDataTask(server.url("/bearer"))
            #expect(outcome.error == nil && (outcome.response as? HTTPURLResponse)?.statusCode == 401)
            let space = try #require(answering.challenges.withLockedValue { $0 }.first?.protectionSpace)
            #expect(space.authenticationMethod == NSURLAuthenticationMethodDefault && space.realm == "api")
            #expect(server.requests.count == 1 && server.requests.allSatisfy { $0.header("Authorization") == nil })
            session.invalidateAndCancel()
            let cancelling = makeSession(delegate: ChallengeAnsweringDelegate([(.cancelAuthenticationChallenge, nil)]))
            #expect(await cancelling.runDataTask(server.url("/bearer")).urlError?.code == .cancelled)
            cancelling.invalidateAndCancel()
        }
    }

    /// The URL's user and password answer default handling; a credential that worked is stored for the session.
    @Test(arguments: WireProtocol.allCases)
    func userInfoCredentialsWorkAndWorkingCredentialsAreStored(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            protect(server)
            let session = makeSession()
            var components = URLComponents(url: server.url("/private"), resolvingAgainstBaseURL: false)!
            components.user = "alice"
            components.password = "wonder land"
            #expect(await session.runDataTask(components.url!).data == Data("secret".utf8))
            let storage = try #require(session.configuration.urlCredentialStorage)
            let space = URLProtectionSpace(
                host: "127.0.0.1", port: server.port, protocol: server.baseURL.scheme, realm: "vault",
                authenticationMethod: NSURLAuthenticationMethodHTTPBasic)
            #expect(storage.credentials(for: space)?["alice"]?.password == "wonder land")
            session.invalidateAndCancel()
        }
    }
}

extension HTTPAuthenticationTests {
    /// A URL that names its user gets that user's answer. After alice's credential worked (and became the space's
    /// default, remembered for sending ahead), bob's URL sent alice's credential ahead, and got alice's data; a
    /// server that refused it made default handling propose alice's again, and the task ended with a 401.
    @Test(arguments: [true, false])
    func theURLsOwnUserIsNotReplacedByAnotherRemembered(serverAcceptsAlice: Bool) async throws {
        try await withServer { server in
            let alice = "Basic " + Data("alice:one".utf8).base64EncodedString()
            let bob = "Basic " + Data("bob:two".utf8).base64EncodedString()
            let acceptsAlice = NIOLockedValueBox(true)
            server.route("/private") { request in
                let authorization = request.headers.first { $0.name.lowercased() == "authorization" }?.value
                if authorization == bob { return .ok("bob's") }
                if authorization == alice, acceptsAlice.withLockedValue({ $0 }) { return .ok("alice's") }
                return MockResponse(status: 401, headers: [("WWW-Authenticate", "Basic realm=\"vault\"")])
            }
            func url(_ user: String, _ password: String) -> URL {
                var components = URLComponents(url: server.url("/private"), resolvingAgainstBaseURL: false)!
                components.user = user
                components.password = password
                return components.url!
            }
            let session = makeSession()
            #expect(await session.runDataTask(url("alice", "one")).data == Data("alice's".utf8))
            acceptsAlice.withLockedValue { $0 = serverAcceptsAlice }
            let second = await session.runDataTask(url("bob", "two"))
            #expect(second.http?.statusCode == 200)
            #expect(second.data == Data("bob's".utf8))
            session.invalidateAndCancel()
        }
    }
}

/// A delegate that never answers.
final class SilentChallengeDelegate: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {}
}

extension HTTPAuthenticationTests {
    /// A challenge nobody answers is bounded by the resource timeout: the task fails, it does not hang.
    @Test(arguments: WireProtocol.allCases)
    func anUnansweredChallengeTimesOut(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            protect(server)
            let session = makeSession(delegate: SilentChallengeDelegate()) { $0.timeoutIntervalForResource = 1 }
            let started = ContinuousClock.now
            #expect(await session.runDataTask(server.url("/private")).urlError?.code == .timedOut)
            // Well under the 60 s request timeout that would end it if the resource timeout did not; a flooded
            // machine at the start of the full suite took 16.7 s.
            #expect(ContinuousClock.now - started < .seconds(30))
            session.invalidateAndCancel()
        }
    }
}

extension HTTPAuthenticationTests {
    /// After a Basic credential worked, later requests at or below the same directory of the same origin send it at
    /// once; other paths, other origins, and plain HTTP for an HTTPS space do not.
    @Test(arguments: WireProtocol.allCases)
    func aWorkingBasicCredentialIsSentPreemptivelyInItsSpace(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            protect(server)
            server.route("/private/deeper", response: .ok("deep"))
            server.route("/elsewhere", response: .ok("open"))
            let delegate = ChallengeAnsweringDelegate([(.useCredential, Self.right)])
            let session = makeSession(delegate: delegate)
            #expect(await session.runDataTask(server.url("/private")).data == Data("secret".utf8))
            #expect(await session.runDataTask(server.url("/private")).data == Data("secret".utf8))
            #expect(await session.runDataTask(server.url("/private/deeper")).data == Data("deep".utf8))
            #expect(await session.runDataTask(server.url("/elsewhere")).data == Data("open".utf8))
            // One challenge only; the second request went out authorized at once.
            #expect(delegate.challenges.withLockedValue { $0.count } == 1)
            let sent = authorizations(server)
            // Required: the checks below index it (an earlier failed request leaves fewer, and indexing past
            // the end would crash the whole test process).
            try #require(sent.count == 5)
            #expect(sent[2] != nil && sent[3] != nil)
            // `/elsewhere` is in the authenticated directory `/` too: RFC 7617's scope is the directory.
            #expect(sent[4] != nil)
            // Another session knows nothing.
            let other = makeSession()
            #expect((await other.runDataTask(server.url("/private")).response as? HTTPURLResponse)?.statusCode == 401)
            session.invalidateAndCancel()
            other.invalidateAndCancel()
        }
    }

    @Test func spacesMatchByOriginAndDirectory() {
        let spaces = AuthenticatedSpacesProbe.make()
        #expect(AuthenticatedSpacesProbe.matches(spaces, "https://example.test/api/v1/items"))
        #expect(AuthenticatedSpacesProbe.matches(spaces, "https://EXAMPLE.test:443/api/v1/other"))
        #expect(!AuthenticatedSpacesProbe.matches(spaces, "https://example.test/api/v2/items"))
        #expect(!AuthenticatedSpacesProbe.matches(spaces, "http://example.test/api/v1/items"))
        #expect(!AuthenticatedSpacesProbe.matches(spaces, "https://example.test:8443/api/v1/items"))
        #expect(!AuthenticatedSpacesProbe.matches(spaces, "https://other.test/api/v1/items"))
    }
}

/// Builds an ``AuthenticatedSpaces`` that authenticated `https://example.test/api/v1/login`.
enum AuthenticatedSpacesProbe {
    static func make() -> AuthenticatedSpaces {
        let spaces = AuthenticatedSpaces()
        spaces.remember(
            .init(
                host: "example.test", port: 443, protocol: "https", realm: "r",
                authenticationMethod: NSURLAuthenticationMethodHTTPBasic),
            for: URL(string: "https://example.test/api/v1/login")!)
        return spaces
    }

    static func matches(_ spaces: AuthenticatedSpaces, _ url: String) -> Bool {
        spaces.space(for: URL(string: url)!) != nil
    }
}

extension HTTPAuthenticationTests {
    /// A delegate that always answers the same wrong credential gets ten tries for Basic, then one for the
    /// unknown scheme (which no credential answers), then the 401 — not a redirect error, not an endless loop.
    @Test(arguments: WireProtocol.allCases)
    func anEndlesslyWrongDelegateEndsWithThe401(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            protect(server)
            let delegate = ChallengeAnsweringDelegate(Array(repeating: (.useCredential, Self.wrong), count: 50))
            let session = makeSession(delegate: delegate)
            let outcome = await session.runDataTask(server.url("/private"))
            #expect(outcome.error == nil)
            #expect((outcome.response as? HTTPURLResponse)?.statusCode == 401)
            #expect(delegate.challenges.withLockedValue { $0.map(\.previousFailureCount) } == Array(0..<10) + [0])
            #expect(server.requests.count == 11)
            session.invalidateAndCancel()
        }
    }
}

extension HTTPAuthenticationTests {
    /// A Basic credential that worked on a request the server then redirected to another origin is remembered for
    /// the origin that asked for it, never for the redirect's target: later requests to the target (here plain HTTP
    /// after an HTTPS origin over h2) carry no `Authorization`, while the origin still gets it ahead.
    @Test(arguments: WireProtocol.allCases)
    func aCredentialIsNotSentAheadToTheOriginItWasRedirectedTo(over wire: WireProtocol) async throws {
        try await withServer(wire) { origin in
            try await withServer(.http) { target in
                target.route("/landing", response: .ok("landed"))
                let landing = target.url("/landing")
                let expected = "Basic " + Data("alice:wonder land".utf8).base64EncodedString()
                origin.route("/private") { request in
                    guard request.header("Authorization") == expected else {
                        return MockResponse(status: 401, headers: [("WWW-Authenticate", "Basic realm=\"vault\"")])
                    }
                    return MockResponse(status: 302, headers: [("Location", landing.absoluteString)])
                }
                let delegate = ChallengeAnsweringDelegate([(.useCredential, Self.right)])
                let session = makeSession(delegate: delegate)
                #expect(await session.runDataTask(origin.url("/private")).data == Data("landed".utf8))
                // A later request of the session to the redirect's target.
                #expect(await session.runDataTask(landing).data == Data("landed".utf8))
                #expect(target.requests.count == 2)
                #expect(target.requests.allSatisfy { $0.header("Authorization") == nil })
                // The origin that asked still gets the credential ahead, without a second challenge.
                #expect(await session.runDataTask(origin.url("/private")).data == Data("landed".utf8))
                #expect(origin.requests.last?.header("Authorization") == expected)
                #expect(delegate.challenges.withLockedValue { $0.count } == 1)
                session.invalidateAndCancel()
            }
        }
    }
}

/// A task delegate that answers the first HTTP authentication challenge with `credential` and cancels any later one,
/// follows redirects as proposed, and records the redirect requests and the metrics it is shown.
final class CredentialWatchingDelegate: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    let credential: URLCredential
    let challengeCount = NIOLockedValueBox(0)
    let redirects = NIOLockedValueBox<[URLRequest]>([])
    let metrics = NIOLockedValueBox<URLSessionTaskMetrics?>(nil)

    init(_ credential: URLCredential) {
        self.credential = credential
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        guard challenge.protectionSpace.authenticationMethod != NSURLAuthenticationMethodServerTrust else {
            return completionHandler(.performDefaultHandling, nil)
        }
        let first = challengeCount.withLockedValue { count in
            count += 1
            return count == 1
        }
        completionHandler(first ? .useCredential : .cancelAuthenticationChallenge, first ? credential : nil)
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        redirects.withLockedValue { $0.append(request) }
        completionHandler(request)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didFinishCollecting metrics: URLSessionTaskMetrics) {
        self.metrics.withLockedValue { $0 = metrics }
    }
}

extension HTTPAuthenticationTests {
    /// The credential an answer put on the request is not shown to `willPerformHTTPRedirection` nor in the task's
    /// metrics (on Darwin it is applied below every request the app sees), yet a same-origin redirect the delegate
    /// follows as proposed still sends it: no second challenge.
    @Test(arguments: WireProtocol.allCases)
    func theAnsweredCredentialStaysOutOfRedirectsAndMetrics(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            let expected = "Basic " + Data("alice:wonder land".utf8).base64EncodedString()
            let moved = server.url("/moved")
            for path in ["/private", "/moved"] {
                server.route(path) { request in
                    guard request.header("Authorization") == expected else {
                        return MockResponse(status: 401, headers: [("WWW-Authenticate", "Basic realm=\"vault\"")])
                    }
                    if path == "/moved" { return .ok("moved") }
                    return MockResponse(status: 302, headers: [("Location", moved.absoluteString)])
                }
            }
            let once = URLCredential(user: "alice", password: "wonder land", persistence: .none)
            let delegate = CredentialWatchingDelegate(once)
            let session = makeSession(delegate: delegate)
            defer { session.invalidateAndCancel() }
            let outcome = await session.runDataTask(server.url("/private"))
            #expect(outcome.data == Data("moved".utf8))
            #expect(delegate.challengeCount.withLockedValue { $0 } == 1)
            #expect(server.requests.map(\.target) == ["/private", "/private", "/moved"])
            #expect(server.requests.last?.header("Authorization") == expected)

            let redirect = try #require(delegate.redirects.withLockedValue { $0 }.first)
            #expect(redirect.url == moved)
            #expect(redirect.value(forHTTPHeaderField: "Authorization") == nil)
            let metrics = try #require(delegate.metrics.withLockedValue { $0 })
            #expect(metrics.transactionMetrics.count == 3)
            let shown = metrics.transactionMetrics.map { $0.request.value(forHTTPHeaderField: "Authorization") }
            #expect(shown == [nil, nil, nil])
        }
    }

    /// What the redirect's delegate hands back gets the answered credential again where it left the field as it was
    /// shown; a value of its own is kept, and nothing follows its request to another origin.
    @Test func aRedirectTheAppLeftAloneGetsTheAnsweredCredentialBack() throws {
        let mine = URLRequest(url: try #require(URL(string: "http://127.0.0.1/private")))
        var retry = mine
        retry.setValue("Basic YTpi", forHTTPHeaderField: "Authorization")
        var answered = AnsweredCredentials()
        answered.record(from: mine, to: retry)
        var proposed = retry
        proposed.url = URL(string: "http://127.0.0.1/moved")

        func sent(_ chosen: URLRequest) -> String? {
            answered.restored(chosen, proposed: proposed).value(forHTTPHeaderField: "Authorization")
        }
        let shown = answered.visible(proposed)
        #expect(shown.value(forHTTPHeaderField: "Authorization") == nil)
        #expect(sent(shown) == "Basic YTpi")
        var own = shown
        own.setValue("Bearer app", forHTTPHeaderField: "Authorization")
        #expect(sent(own) == "Bearer app")
        var elsewhere = shown
        elsewhere.url = URL(string: "http://example.com/moved")
        #expect(sent(elsewhere) == nil)
    }
}
