import Courier
import CourierMockServer
import CourierTestSupport
import Crypto
import Foundation
import NIOConcurrencyHelpers
import Testing

/// A session delegate that answers server-trust challenges with a fixed disposition (or by an SPKI pin) and records
/// what it was asked.
final class TrustDelegate: NSObject, URLSessionDelegate, @unchecked Sendable {
    enum Answer {
        case trust, cancel, defaultHandling, reject, otherCredential
        /// Trust when the leaf's key hashes (SHA-256 of Darwin's external representation) to this.
        case pin(Data)
    }

    let answer: Answer
    let challenges = NIOLockedValueBox<[URLAuthenticationChallenge]>([])
    let onDelegateQueue = NIOLockedValueBox<[Bool]>([])
    weak var expectedQueue: OperationQueue?

    init(_ answer: Answer) { self.answer = answer }

    func urlSession(
        _ session: URLSession, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        challenges.withLockedValue { $0.append(challenge) }
        onDelegateQueue.withLockedValue { $0.append(OperationQueue.current === session.delegateQueue) }
        guard let trust = challenge.protectionSpace.serverTrust else {
            return completionHandler(.performDefaultHandling, nil)
        }
        switch answer {
        case .trust: completionHandler(.useCredential, URLCredential(trust: trust))
        case .cancel: completionHandler(.cancelAuthenticationChallenge, nil)
        case .defaultHandling: completionHandler(.performDefaultHandling, nil)
        case .reject: completionHandler(.rejectProtectionSpace, nil)
        case .otherCredential:
            completionHandler(.useCredential, URLCredential(user: "u", password: "p", persistence: .none))
        case .pin(let pin):
            // The usual Darwin pinning code, unchanged but for the declared error type.
            guard let key = SecTrustCopyKey(trust), let bytes = SecKeyCopyExternalRepresentation(key, nil),
                Data(SHA256.hash(data: bytes)) == pin
            else { return completionHandler(.cancelAuthenticationChallenge, nil) }
            completionHandler(.useCredential, URLCredential(trust: trust))
        }
    }
}

@Suite("Server trust challenges")
struct ServerTrustChallengeTests {
    @Test func theSessionDelegateIsAskedAboutTheServerAndCanTrustIt() async throws {
        try await withServer(.https) { server in
            server.route("/t", response: .ok("trusted"))
            let delegate = TrustDelegate(.trust)
            let session = makeSession(delegate: delegate)
            let outcome = await session.runDataTask(server.url("/t"))
            #expect(outcome.error == nil)
            #expect(outcome.data == Data("trusted".utf8))
            let challenges = delegate.challenges.withLockedValue { $0 }
            #expect(challenges.count == 1)
            let space = try #require(challenges.first?.protectionSpace)
            #expect(space.authenticationMethod == NSURLAuthenticationMethodServerTrust)
            #expect(space.host == "127.0.0.1" && space.port == server.port && space.protocol == "https")
            #expect(challenges.first?.previousFailureCount == 0 && challenges.first?.proposedCredential == nil)
            let trust = try #require(space.serverTrust)
            #expect(SecTrustGetCertificateCount(trust) == 1)
            #expect(
                (SecTrustCopyCertificateChain(trust) as? [SecCertificate]).map { $0.map(SecCertificateCopyData) }
                    == [Data(server.certificateDER)])
            #expect(delegate.onDelegateQueue.withLockedValue { $0 } == [true])
            // A second request reuses the approved connection: no second challenge.
            #expect(await session.runDataTask(server.url("/t")).error == nil)
            #expect(delegate.challenges.withLockedValue { $0.count } == 1)
            session.invalidateAndCancel()
        }
    }

    /// A delegate that trusts the server has the last word, as on Darwin: a certificate that names another host (a
    /// development server reached by its address, say) is accepted when the delegate says so, while default handling
    /// still checks the host.
    @Test func aDelegatesTrustIsNotOverruledByTheHostCheck() async throws {
        let authority = try TestCertificateAuthority()
        let identity = try authority.serverIdentity(dnsNames: ["elsewhere.test"], ipAddresses: [[10, 0, 0, 1]])
        try await withServer(.https, tlsIdentity: identity) { server in
            server.route("/t", response: .ok("trusted"))
            let trusting = makeSession(delegate: TrustDelegate(.trust))
            let outcome = await trusting.runDataTask(server.url("/t"))
            #expect(outcome.error == nil)
            #expect(outcome.data == Data("trusted".utf8))
            trusting.invalidateAndCancel()
            let checking = makeSession(delegate: TrustDelegate(.defaultHandling)) {
                $0.courierAdditionalTrustedCertificates = [authority.certificate.derData]
            }
            #expect(await checking.runDataTask(server.url("/t")).urlError?.code == .serverCertificateUntrusted)
            checking.invalidateAndCancel()
        }
    }

    @Test func cancellingTheChallengeFailsTheTaskAsCancelled() async throws {
        try await withServer(.https) { server in
            server.route("/t", response: .ok("secret"))
            let session = makeSession(delegate: TrustDelegate(.cancel))
            let outcome = await session.runDataTask(server.url("/t"))
            #expect(outcome.urlError?.code == .cancelled)
            #expect(server.requests.isEmpty)
            session.invalidateAndCancel()
        }
    }

    /// Default handling is Courier's own evaluation: the self-signed test server is untrusted, unless the session
    /// trusts its certificate. Rejecting the protection space and answering with a non-trust credential mean the
    /// same.
    @Test(arguments: [TrustDelegate.Answer.defaultHandling, .reject, .otherCredential])
    func defaultHandlingEvaluatesWithTheSessionsRoots(answer: TrustDelegate.Answer) async throws {
        try await withServer(.https) { server in
            server.route("/t", response: .ok("ok"))
            let untrusting = makeSession(delegate: TrustDelegate(answer))
            let refused = await untrusting.runDataTask(server.url("/t"))
            #expect(refused.urlError?.code == .serverCertificateUntrusted)
            #expect(server.requests.isEmpty)
            untrusting.invalidateAndCancel()
            let trusting = makeSession(delegate: TrustDelegate(answer)) {
                $0.courierAdditionalTrustedCertificates = [Data(server.certificateDER)]
            }
            #expect(await trusting.runDataTask(server.url("/t")).data == Data("ok".utf8))
            trusting.invalidateAndCancel()
        }
    }

    @Test func aPinningDelegateAcceptsOnlyItsKey() async throws {
        try await withServer(.https) { server in
            server.route("/t", response: .ok("pinned"))
            let certificate = try #require(SecCertificateCreateWithData(nil, Data(server.certificateDER)))
            let key = try #require(
                SecCertificateCopyKey(certificate).flatMap { SecKeyCopyExternalRepresentation($0, nil) })
            let rightPin = Data(SHA256.hash(data: key))
            let pinned = makeSession(delegate: TrustDelegate(.pin(rightPin)))
            #expect(await pinned.runDataTask(server.url("/t")).data == Data("pinned".utf8))
            pinned.invalidateAndCancel()
            let wrong = makeSession(delegate: TrustDelegate(.pin(Data(repeating: 0, count: 32))))
            #expect(await wrong.runDataTask(server.url("/t")).urlError?.code == .cancelled)
            wrong.invalidateAndCancel()
            #expect(server.requests.count == 1)
        }
    }

    /// Connections are pooled per session: another session's delegate is asked again, and its refusal holds even
    /// though the first session's connection to the same server is open and idle.
    @Test func anApprovedConnectionNeverServesAnotherSession() async throws {
        try await withServer(.https) { server in
            server.route("/t", response: .ok("ok"))
            let trusting = TrustDelegate(.trust)
            let first = makeSession(delegate: trusting)
            #expect(await first.runDataTask(server.url("/t")).error == nil)
            let refusing = TrustDelegate(.cancel)
            let second = makeSession(delegate: refusing)
            #expect(await second.runDataTask(server.url("/t")).urlError?.code == .cancelled)
            #expect(refusing.challenges.withLockedValue { $0.count } == 1)
            first.invalidateAndCancel()
            second.invalidateAndCancel()
        }
    }

    @Test(arguments: [true, false])
    func anAsyncOnlyDelegateAnswersTheChallenge(trusts: Bool) async throws {
        try await withServer(.https) { server in
            server.route("/async-trust", response: .ok("trusted"))
            let delegate = AsyncTrustDelegate(trusts: trusts)
            let session = makeSession(delegate: delegate)
            defer { session.invalidateAndCancel() }
            let outcome = await session.runDataTask(server.url("/async-trust"))
            #expect(delegate.asked.withLockedValue { $0 } == 1)
            if trusts {
                #expect(outcome.error == nil)
                #expect(outcome.data == Data("trusted".utf8))
            } else {
                #expect(outcome.urlError?.code == .cancelled)
            }
        }
    }
}

/// A session delegate that implements only the async form of the connection-level challenge.
final class AsyncTrustDelegate: NSObject, URLSessionDelegate, @unchecked Sendable {
    let trusts: Bool
    let asked = NIOLockedValueBox(0)

    init(trusts: Bool) { self.trusts = trusts }

    func urlSession(
        _ session: URLSession, didReceive challenge: URLAuthenticationChallenge
    ) async -> (URLSession.AuthChallengeDisposition, URLCredential?) {
        asked.withLockedValue { $0 += 1 }
        guard trusts, let trust = challenge.protectionSpace.serverTrust else {
            return (.cancelAuthenticationChallenge, nil)
        }
        return (.useCredential, URLCredential(trust: trust))
    }
}

/// Connection-level challenges put to the task-level method when the session delegate lacks the session-level one.
extension ServerTrustChallengeTests {
    @Test func aDelegateWithOnlyTheTaskLevelMethodIsAskedAboutTheServer() async throws {
        try await withServer(.https) { server in
            server.route("/t", response: .ok("trusted"))
            let delegate = TaskLevelTrustDelegate()
            let session = makeSession(delegate: delegate)
            defer { session.invalidateAndCancel() }
            let task = session.dataTask(with: server.url("/t"))
            task.resume()
            try await waitUntil { task.state == .completed }
            #expect(task.error == nil)
            let asked = delegate.asked.withLockedValue { $0 }
            #expect(asked.map(\.method) == [NSURLAuthenticationMethodServerTrust])
            #expect(asked.first?.taskIdentifier == task.taskIdentifier)
        }
    }

    @Test func aTasksOwnDelegateAnswersWhenTheSessionDelegateHasNoChallengeMethod() async throws {
        try await withServer(.https) { server in
            server.route("/t", response: .ok("trusted"))
            let session = makeSession(delegate: SilentSessionDelegate())
            defer { session.invalidateAndCancel() }
            let own = TaskLevelTrustDelegate()
            let task = session.dataTask(with: server.url("/t"))
            task.delegate = own
            task.resume()
            try await waitUntil { task.state == .completed }
            #expect(task.error == nil)
            #expect(own.asked.withLockedValue { $0.map(\.taskIdentifier) } == [task.taskIdentifier])
            // A task without a delegate of its own is not asked. It reuses the connection the first one's approved
            // when that is back in the pool; the first task's completion can be reported before it is (a loaded
            // machine showed it), and a new connection is then evaluated by default: this server is not trusted.
            let second = session.dataTask(with: server.url("/t?again"))
            second.resume()
            try await waitUntil { second.state == .completed }
            if server.connectionCount == 1 {
                #expect(second.error == nil)
            } else {
                #expect((second.error as? URLError)?.code == .serverCertificateUntrusted)
            }
            #expect(own.asked.withLockedValue { $0.count } == 1)
        }
    }

    /// A session without a delegate (`URLSession.shared` and the like) puts the challenge to the task's own delegate:
    /// `data(for:delegate:)` trusts a self-signed server through it.
    @Test func aTasksOwnDelegateIsAskedInASessionWithoutADelegate() async throws {
        try await withServer(.https) { server in
            server.route("/t", response: .ok("trusted"))
            let session = makeSession()
            defer { session.invalidateAndCancel() }
            let own = TaskLevelTrustDelegate()
            let (data, _) = try await session.data(from: server.url("/t"), delegate: own)
            #expect(data == Data("trusted".utf8))
            #expect(own.asked.withLockedValue { $0.map(\.method) } == [NSURLAuthenticationMethodServerTrust])
        }
    }

    /// A task delegate that trusts a server whose certificate names another host has the last word, as a session
    /// delegate has (`aDelegatesTrustIsNotOverruledByTheHostCheck`): NIOSSL's host check of the session's shared
    /// context ran after it and failed the task with `serverCertificateUntrusted`.
    @Test func aTaskDelegatesTrustIsNotOverruledByTheHostCheck() async throws {
        let authority = try TestCertificateAuthority()
        let identity = try authority.serverIdentity(dnsNames: ["elsewhere.test"], ipAddresses: [[10, 0, 0, 1]])
        try await withServer(.https, tlsIdentity: identity) { server in
            server.route("/t", response: .ok("trusted"))
            let session = makeSession()
            defer { session.invalidateAndCancel() }
            let own = TaskLevelTrustDelegate()
            let (data, _) = try await session.data(from: server.url("/t"), delegate: own)
            #expect(data == Data("trusted".utf8))
            #expect(own.asked.withLockedValue { $0.count } == 1)
            // Default handling still checks the host (Courier's evaluation, now the only one), with the CA trusted.
            let checking = makeSession { $0.courierAdditionalTrustedCertificates = [authority.certificate.derData] }
            defer { checking.invalidateAndCancel() }
            do {
                _ = try await checking.data(from: server.url("/t"), delegate: DelegateFallbackTests.EmptyTaskDelegate())
                Issue.record("default handling trusted a certificate for another host")
            } catch {
                #expect((error as? URLError)?.code == .serverCertificateUntrusted)
            }
        }
    }

    /// The same delegate's refusal holds even for a server the session's roots trust: a pinning task delegate is not
    /// bypassed because the session has no delegate.
    @Test func aTasksOwnDelegateRefusalHoldsInASessionWithoutADelegate() async throws {
        try await withServer(.https) { server in
            server.route("/t", response: .ok("secret"))
            let session = makeSession { $0.courierAdditionalTrustedCertificates = [Data(server.certificateDER)] }
            defer { session.invalidateAndCancel() }
            let own = TaskLevelTrustDelegate(trusts: false)
            do {
                _ = try await session.data(from: server.url("/t"), delegate: own)
                Issue.record("the task delegate refused the server, yet the request was answered")
            } catch {
                #expect((error as? URLError)?.code == .cancelled)
            }
            #expect(own.asked.withLockedValue { $0.count } == 1)
            #expect(server.requests.isEmpty)
        }
    }
}

/// A session delegate that implements no challenge method.
private final class SilentSessionDelegate: NSObject, URLSessionDelegate, @unchecked Sendable {}

/// A delegate that implements only the task-level challenge method, as Alamofire's does, trusting every server and
/// recording each challenge's method and task.
private final class TaskLevelTrustDelegate: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    let asked = NIOLockedValueBox<[(method: String, taskIdentifier: Int)]>([])
    /// `false`: cancel every server-trust challenge, as a pinning delegate does when the pin does not match.
    let trusts: Bool

    init(trusts: Bool = true) {
        self.trusts = trusts
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        asked.withLockedValue { $0.append((challenge.protectionSpace.authenticationMethod, task.taskIdentifier)) }
        guard let trust = challenge.protectionSpace.serverTrust else {
            return completionHandler(.performDefaultHandling, nil)
        }
        guard trusts else { return completionHandler(.cancelAuthenticationChallenge, nil) }
        completionHandler(.useCredential, URLCredential(trust: trust))
    }
}
