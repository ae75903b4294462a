import CourierHTTP
import CourierTransport
import Foundation
import NIOConcurrencyHelpers
import NIOSSL

/// Asks a session's delegate about every new TLS connection, as Darwin does: an
/// `NSURLAuthenticationMethodServerTrust` challenge whose `protectionSpace.serverTrust` holds the server's chain goes
/// to `urlSession(_:didReceive:completionHandler:)` on the delegate queue.
///
/// - `.useCredential` with `URLCredential(trust:)`: the server is trusted.
/// - `.performDefaultHandling`, `.rejectProtectionSpace`, or `.useCredential` with any other credential: Courier's
///   own evaluation decides (``TrustEvaluation``; the session's `courierAdditionalTrustedCertificates` count as roots).
/// - `.cancelAuthenticationChallenge`: the connection fails with `URLError(.cancelled)`.
///
/// When a server asks for a client certificate, it also asks the delegate an `NSURLAuthenticationMethodClientCertificate`
/// challenge (``clientIdentity(host:port:)``).
///
/// A session delegate that does not implement the session-level method has both challenges put to
/// `urlSession(_:task:didReceive:completionHandler:)` for the task the connection is opened for, as on Darwin (see
/// ``connectingTask(host:port:in:)``).
///
/// A delegate that never answers is bounded by the connection's handshake timeout. The session makes one evaluator,
/// and connections are pooled per evaluator, so a connection one session's delegate approved (or presented a
/// certificate for) never serves another session. Sessions without a delegate have no evaluator: NIOSSL verifies
/// against the same roots, and the credential storage's default identity is presented when a server asks; a task
/// of theirs with a delegate of its own is asked through a ``TaskTrustEvaluator``.
final class SessionTrustEvaluator: ServerTrustEvaluator, ClientCertificateProvider {
    /// The session, attached once it exists; weak, as the session holds the evaluator.
    private let sessionBox = NIOLockedValueBox<WeakSession>(WeakSession())
    private let additionalRoots: [SecCertificate]
    /// Where `.performDefaultHandling` looks for a client certificate: the session's `urlCredentialStorage`.
    private let credentialStorage: URLCredentialStorage?

    init(additionalTrustedCertificates: [Data], credentialStorage: URLCredentialStorage?) {
        self.additionalRoots = additionalTrustedCertificates.map { SecCertificate(derData: $0) }
        self.credentialStorage = credentialStorage
    }

    func attach(_ session: URLSession) {
        sessionBox.withLockedValue { $0.session = session }
    }

    private var session: URLSession? { sessionBox.withLockedValue { $0.session } }

    private struct WeakSession {
        weak var session: URLSession?
    }

    func evaluate(certificateChain: [[UInt8]], host: String, port: Int) async -> ServerTrustDecision {
        let trust = Self.trust(of: certificateChain, host: host, additionalRoots: additionalRoots)
        guard let session, let delegate = session.delegate else {
            return await Self.defaultDecision(trust, chain: certificateChain)
        }
        let challenge = Self.serverTrustChallenge(trust, host: host, port: port)
        challenge.connectionTask = Self.connectingTask(host: host, port: port, in: session)
        let answer = await ask(delegate, of: session, challenge)
        return await Self.decision(answer, trust: trust, chain: certificateChain, host: host)
    }

    /// The server's chain as the `SecTrust` a challenge carries, with the session's extra roots.
    static func trust(of chain: [[UInt8]], host: String, additionalRoots: [SecCertificate]) -> SecTrust {
        SecTrust(
            certificates: chain.map { SecCertificate(derData: Data($0)) },
            policy: SecPolicy(server: true, hostname: host),
            additionalRoots: additionalRoots
        )
    }

    /// The `NSURLAuthenticationMethodServerTrust` challenge about `trust`.
    static func serverTrustChallenge(_ trust: SecTrust, host: String, port: Int) -> URLAuthenticationChallenge {
        let space = URLProtectionSpace(
            host: host, port: port, protocol: NSURLProtectionSpaceHTTPS, realm: nil,
            authenticationMethod: NSURLAuthenticationMethodServerTrust, serverTrust: trust, distinguishedNames: nil)
        return URLAuthenticationChallenge(
            protectionSpace: space, proposedCredential: nil, previousFailureCount: 0, failureResponse: nil,
            error: nil, sender: CompletionHandlerChallengeSender())
    }

    /// What the delegate's answer to a server-trust challenge means for the connection (see the type's summary).
    static func decision(
        _ answer: (URLSession.AuthChallengeDisposition, URLCredential?), trust: SecTrust, chain: [[UInt8]],
        host: String
    ) async -> ServerTrustDecision {
        switch answer.0 {
        case .useCredential where answer.1?.trust != nil:
            return .trust
        case .cancelAuthenticationChallenge:
            return .reject(.cancelled("the app cancelled the server trust challenge of \(host)"))
        default:
            return await defaultDecision(trust, chain: chain)
        }
    }

    /// The task a new connection to `host`:`port` is most likely opened for: the oldest running task of the session
    /// whose current request goes there and has no response yet, else the oldest running one that goes there. The
    /// transport opens a connection for a request but may give it to another waiting for the same origin, so this is
    /// as precise as the question allows; the delegates that implement only the task-level method answer
    /// connection-level challenges alike for every task of an origin.
    static func connectingTask(host: String, port: Int, in session: URLSession) -> URLSessionTask? {
        let candidates = session.registry.allTasks().filter { task in
            guard task.state == .running, let url = task.currentRequest?.url,
                let taskHost = url.host(percentEncoded: false)
            else { return false }
            let unbracketed =
                taskHost.hasPrefix("[") && taskHost.hasSuffix("]") ? String(taskHost.dropFirst().dropLast()) : taskHost
            // The transport names an internationalized host by its A-labels (see `Endpoint`).
            let bare = RequestHost.asciiName(unbracketed) ?? unbracketed
            let secure = ["https", "wss"].contains(url.scheme?.lowercased() ?? "")
            return bare.lowercased() == host.lowercased() && (url.port ?? (secure ? 443 : 80)) == port
        }
        return candidates.first { $0.response == nil } ?? candidates.first
    }

    /// Courier's own evaluation of `trust` (`.performDefaultHandling`).
    static func defaultDecision(_ trust: SecTrust, chain: [[UInt8]]) async -> ServerTrustDecision {
        guard let failure = await TrustEvaluation.evaluate(trust) else { return .trust }
        return .reject(failure.withPeerCertificateChain(chain))
    }

    /// Asks the delegate: its async method, whose default asks the completion handler form on the delegate queue.
    private func ask(
        _ delegate: any URLSessionDelegate, of session: URLSession, _ challenge: URLAuthenticationChallenge
    ) async -> (URLSession.AuthChallengeDisposition, URLCredential?) {
        await delegate.urlSession(session, didReceive: challenge)
    }

    /// The server asked for a client certificate: an `NSURLAuthenticationMethodClientCertificate` challenge whose
    /// `proposedCredential` is the storage's default identity for the space.
    ///
    /// - `.useCredential` with an identity credential: present it (with its `certificates` as the intermediates, or
    ///   the identity's own chain); with any other credential, continue without a certificate.
    /// - `.performDefaultHandling` or `.rejectProtectionSpace`: the storage's default identity, else none.
    /// - `.cancelAuthenticationChallenge`: the connection fails with `URLError(.cancelled)`.
    ///
    /// `protectionSpace.distinguishedNames` is empty: NIOSSL does not expose the certificate authorities the
    /// server named.
    func clientIdentity(host: String, port: Int) async -> ClientIdentityDecision {
        let space = ClientCertificateCredentials.space(host: host, port: port)
        let stored = credentialStorage?.defaultCredential(for: space)
        guard let session, let delegate = session.delegate else {
            return ClientCertificateCredentials.decision(presenting: stored)
        }
        let challenge = URLAuthenticationChallenge(
            protectionSpace: space, proposedCredential: stored, previousFailureCount: 0, failureResponse: nil,
            error: nil, sender: CompletionHandlerChallengeSender())
        challenge.connectionTask = Self.connectingTask(host: host, port: port, in: session)
        let (disposition, credential) = await ask(delegate, of: session, challenge)
        switch disposition {
        case .useCredential:
            return ClientCertificateCredentials.decision(presenting: credential)
        case .cancelAuthenticationChallenge:
            return .reject(.cancelled("the app cancelled the client certificate challenge of \(host)"))
        default:
            return ClientCertificateCredentials.decision(presenting: stored)
        }
    }
}
