import Foundation

/// A custom `URLProtocol`'s authentication challenge, put to the task's delegate as Darwin does
/// (`urlSession(_:task:didReceive:completionHandler:)` on the delegate queue, falling back to the session
/// delegate's), with the answer passed to the challenge's sender: `.useCredential` → `use(_:for:)` (no credential:
/// `continueWithoutCredential(for:)`), `.performDefaultHandling` → `performDefaultHandling(for:)`,
/// `.rejectProtectionSpace` → `rejectProtectionSpaceAndContinue(with:)`, `.cancelAuthenticationChallenge` →
/// `cancel(_:)`. Without a delegate, default handling.
enum ProtocolChallengeRelay {
    static func ask(about challenge: URLAuthenticationChallenge, for task: URLSessionTask) {
        guard let sender = challenge.sender else { return }
        guard let delegate = task.resolvedDelegate(URLSessionTaskDelegate.self) else {
            sender.performDefaultHandling(for: challenge)
            return
        }
        let session = task.session
        session.dispatcher.async {
            let once = CompletionOnce()
            delegate.urlSession(session, task: task, didReceive: challenge) { disposition, credential in
                guard once.claim() else { return }
                switch disposition {
                case .useCredential:
                    if let credential {
                        sender.use(credential, for: challenge)
                    } else {
                        sender.continueWithoutCredential(for: challenge)
                    }
                case .performDefaultHandling: sender.performDefaultHandling(for: challenge)
                case .rejectProtectionSpace: sender.rejectProtectionSpaceAndContinue(with: challenge)
                case .cancelAuthenticationChallenge: sender.cancel(challenge)
                @unknown default: sender.cancel(challenge)
                }
            }
        }
    }
}
