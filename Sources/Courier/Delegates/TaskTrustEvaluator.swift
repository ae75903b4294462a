import CourierTransport
import Foundation
import NIOConcurrencyHelpers

/// Asks a task's own delegate about the new TLS connections the task opens, in a session without a delegate.
///
/// Darwin puts a connection-level challenge to the task delegate's `urlSession(_:task:didReceive:completionHandler:)`
/// when the session has no delegate method for it ("If your app does not provide a session delegate method, the
/// NSURLSession object calls the task delegate's urlSession(_:task:didReceive:completionHandler:) method"): that is
/// how `URLSession.shared.data(for:delegate:)` pins a server or trusts a self-signed one. A session with a delegate
/// routes the challenge through its ``SessionTrustEvaluator``; a session without one has none, so each of its tasks
/// with a delegate gets this evaluator, and the answers mean the same (see ``SessionTrustEvaluator``).
///
/// The pool keys connections by evaluator: the delegate's approval serves this task alone, and a connection the
/// session's default verification trusted never lets the task skip its delegate.
final class TaskTrustEvaluator: ServerTrustEvaluator {
    /// Weak: a pooled connection holds its evaluator after the task ended.
    private let taskBox: NIOLockedValueBox<WeakTask>
    private let additionalRoots: [SecCertificate]

    private struct WeakTask {
        weak var task: URLSessionTask?
    }

    init(task: URLSessionTask, additionalTrustedCertificates: [Data]) {
        self.taskBox = NIOLockedValueBox(WeakTask(task: task))
        self.additionalRoots = additionalTrustedCertificates.map { SecCertificate(derData: $0) }
    }

    func evaluate(certificateChain: [[UInt8]], host: String, port: Int) async -> ServerTrustDecision {
        let trust = SessionTrustEvaluator.trust(of: certificateChain, host: host, additionalRoots: additionalRoots)
        guard let task = taskBox.withLockedValue({ $0.task }), let delegate = task.delegate else {
            return await SessionTrustEvaluator.defaultDecision(trust, chain: certificateChain)
        }
        let challenge = SessionTrustEvaluator.serverTrustChallenge(trust, host: host, port: port)
        challenge.connectionTask = task
        let session = task.session
        // On the delegate queue; the first answer counts. A delegate without the method answers through the
        // protocol's default (default handling, as the session has no delegate to fall back to).
        let answer: (URLSession.AuthChallengeDisposition, URLCredential?) = await task.askSessionDelegate { reply in
            delegate.urlSession(session, task: task, didReceive: challenge) { reply(($0, $1)) }
        }
        return await SessionTrustEvaluator.decision(answer, trust: trust, chain: certificateChain, host: host)
    }
}
