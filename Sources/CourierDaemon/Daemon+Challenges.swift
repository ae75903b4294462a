import Courier
import Foundation

/// Authentication in background transfers: a challenge goes to the app attached to the session, whose delegate
/// answers as for an in-process task. With no app attached, or no answer within ``challengeTimeout``, the daemon
/// answers with a credential the app gave earlier for the same space (kept in memory, never on disk, while the
/// daemon runs and the credential's persistence is not `.none`), else by default handling, which leaves the 401 or
/// 407 as the task's response.
extension Daemon {
    /// How long a transfer waits for the app's answer.
    static let challengeTimeout: TimeInterval = 60

    struct PendingChallenge {
        var identifier: String
        var space: CredentialKey
        var completion: @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    }

    /// A protection space of one session, for the credentials its app gave.
    struct CredentialKey: Hashable {
        var identifier: String
        var host: String
        var port: Int
        var realm: String?
        var method: String
        var isProxy: Bool
    }

    func attemptChallenged(
        _ key: TaskKey, attempt: TransferAttempt, challenge: URLAuthenticationChallenge,
        completion: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        let space = challenge.protectionSpace
        let credentialKey = CredentialKey(
            identifier: key.identifier, host: space.host, port: space.port, realm: space.realm,
            method: space.authenticationMethod, isProxy: space.isProxy())
        guard attempts[key] === attempt, let client = attachments[key.identifier] else {
            return answerWithoutApp(challenge, key: credentialKey, completion: completion)
        }
        nextChallenge += 1
        let id = nextChallenge
        pendingChallenges[id] = PendingChallenge(
            identifier: key.identifier, space: credentialKey, completion: completion)
        client.send(.challenge(BackgroundChallenge(id: id, task: key.task, challenge: challenge)))
        queue.asyncAfter(deadline: .now() + Self.challengeTimeout) { [self] in
            guard let pending = pendingChallenges.removeValue(forKey: id) else { return }
            logger.info("task \(key.identifier)/\(key.task): no answer to its challenge; default handling")
            answerWithoutApp(challenge, key: pending.space, completion: pending.completion)
        }
    }

    /// The app answered challenge `id` (only the session's attached client may).
    func answered(_ id: UInt64, with answer: BackgroundChallengeAnswer, from identifier: String) {
        guard let pending = pendingChallenges[id], pending.identifier == identifier else { return }
        pendingChallenges.removeValue(forKey: id)
        let credential = answer.credential
        if answer.resolvedDisposition == .useCredential, let credential, credential.persistence != .none {
            rememberedCredentials[pending.space] = credential
        }
        pending.completion(answer.resolvedDisposition, credential)
    }

    /// The session's app went away: its open questions get default handling now.
    func abandonChallenges(of identifier: String) {
        for (id, pending) in pendingChallenges where pending.identifier == identifier {
            pendingChallenges.removeValue(forKey: id)
            pending.completion(.performDefaultHandling, nil)
        }
    }

    private func answerWithoutApp(
        _ challenge: URLAuthenticationChallenge, key: CredentialKey,
        completion: @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        if challenge.previousFailureCount == 0, let remembered = rememberedCredentials[key] {
            completion(.useCredential, remembered)
        } else {
            completion(.performDefaultHandling, nil)
        }
    }
}
