import CourierHTTP
import CourierTransport
import Foundation
import NIOConcurrencyHelpers

/// Asks a session's delegate about every new TLS connection, as Darwin does: an
/// `NSURLAuthenticationMethodServerTrust` challenge whose `protectionSpace.serverTrust` holds the server's chain goes
/// to `urlSession(_:didReceive:completionHandler:)` on the delegate queue.
///
/// - `.useCredential` with `URLCredential(trust:)`: the server is trusted.
/// - `.performDefaultHandling`, `.rejectProtectionSpace`, or `.useCredential` with any other credential: Courier's
///   own evaluation decides (``TrustEvaluation``; the session's `courierAdditionalTrustedCertificates` count as roots).
/// - `.cancelAuthenticationChallenge`: the connection fails with `URLError(.cancelled)`.
///
/// A delegate that never answers is bounded by the connection's handshake timeout. The session makes one evaluator,
/// and connections are pooled per evaluator, so a connection one session's delegate approved never serves another
/// session. Sessions without a delegate have no evaluator: NIOSSL verifies against the same roots.
final class SessionTrustEvaluator: ServerTrustEvaluator {
    /// The session, attached once it exists; weak, as the session holds the evaluator.
    private let sessionBox = NIOLockedValueBox<WeakSession>(WeakSession())
    private let additionalRoots: [SecCertificate]

    init(additionalTrustedCertificates: [Data]) {
        self.additionalRoots = additionalTrustedCertificates.map { SecCertificate(derData: $0) }
    }

    func attach(_ session: URLSession) {
        sessionBox.withLockedValue { $0.session = session }
    }

    private var session: URLSession? { sessionBox.withLockedValue { $0.session } }

    private struct WeakSession {
        weak var session: URLSession?
    }

    func evaluate(certificateChain: [[UInt8]], host: String, port: Int) async -> ServerTrustDecision {
        let trust = SecTrust(
            certificates: certificateChain.map { SecCertificate(derData: Data($0)) },
            policy: SecPolicy(server: true, hostname: host),
            additionalRoots: additionalRoots
        )
        guard let session, let delegate = session.delegate else {
            return await defaultDecision(trust, chain: certificateChain)
        }
        let space = URLProtectionSpace(
            host: host, port: port, protocol: NSURLProtectionSpaceHTTPS, realm: nil,
            authenticationMethod: NSURLAuthenticationMethodServerTrust, serverTrust: trust, distinguishedNames: nil)
        let challenge = URLAuthenticationChallenge(
            protectionSpace: space, proposedCredential: nil, previousFailureCount: 0, failureResponse: nil,
            error: nil, sender: CompletionHandlerChallengeSender())
        let (disposition, credential) = await withCheckedContinuation { continuation in
            session.dispatcher.async {
                let once = CompletionOnce()
                delegate.urlSession(session, didReceive: challenge) { disposition, credential in
                    guard once.claim() else { return }
                    continuation.resume(returning: (disposition, credential))
                }
            }
        }
        switch disposition {
        case .useCredential where credential?.trust != nil:
            return .trust
        case .cancelAuthenticationChallenge:
            return .reject(.cancelled("the app cancelled the server trust challenge of \(host)"))
        default:
            return await defaultDecision(trust, chain: certificateChain)
        }
    }

    private func defaultDecision(_ trust: SecTrust, chain: [[UInt8]]) async -> ServerTrustDecision {
        guard let failure = await TrustEvaluation.evaluate(trust) else { return .trust }
        return .reject(failure.withPeerCertificateChain(chain))
    }
}
