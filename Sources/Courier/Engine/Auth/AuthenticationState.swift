import Foundation
import NIOConcurrencyHelpers

/// What one task's HTTP authentication has seen, across its attempts: per protection space, how many credentials
/// were sent and the last one (for `previousFailureCount` and `proposedCredential`), and the credential of the
/// attempt in flight, stored in the credential storage once a response shows it worked.
final class AuthenticationState: Sendable {
    private struct State {
        var attempts: [AuthenticationQuestion.Space: Int] = [:]
        var lastCredential: [AuthenticationQuestion.Space: URLCredential] = [:]
        /// The credential of the attempt in flight, with the URL it was sent to: the URL that proves it, even when
        /// the answer is a redirect and the response that settles it comes from another origin.
        var inFlight: (space: AuthenticationQuestion.Space, credential: URLCredential, url: URL?)?
        /// Digest nonce counts, per nonce.
        var nonceCounts: [String: Int] = [:]
        /// Credentials sent again because the server only renewed its nonce, per space.
        var staleResends: [AuthenticationQuestion.Space: Int] = [:]
    }

    private let state = NIOLockedValueBox(State())

    /// How many credentials this task sent for `space` (each drew another challenge, or this one would not exist).
    func failures(for space: AuthenticationQuestion.Space) -> Int {
        state.withLockedValue { $0.attempts[space] ?? 0 }
    }

    /// The credential last sent for `space`.
    func lastCredential(for space: AuthenticationQuestion.Space) -> URLCredential? {
        state.withLockedValue { $0.lastCredential[space] }
    }

    /// `credential` goes out for `space` with the next attempt, to `url`.
    func sending(_ credential: URLCredential, for space: AuthenticationQuestion.Space, to url: URL? = nil) {
        state.withLockedValue { state in
            state.attempts[space, default: 0] += 1
            state.lastCredential[space] = credential
            state.inFlight = (space, credential, url)
        }
    }

    /// The credential last sent for `space` worked (the response was no challenge for it, a redirect included): the
    /// task's failures there start again from zero. A redirect to another origin takes the credential off the request
    /// (a proxy's too), and the challenge that draws for the same space is a first one: counted as the credential's
    /// failure, it had `previousFailureCount` 1, and default handling gave up on the stored credential that works.
    func worked(for space: AuthenticationQuestion.Space) {
        state.withLockedValue { state in
            state.attempts[space] = nil
            state.staleResends[space] = nil
        }
    }

    /// `credential`, sent ahead with the request before any challenge (a Basic space the session authenticated in),
    /// drew a challenge for `space`: a failure, as if this task had sent it in answer to one.
    func refusedAhead(_ credential: URLCredential, for space: AuthenticationQuestion.Space) {
        state.withLockedValue { state in
            state.attempts[space, default: 0] += 1
            state.lastCredential[space] = credential
        }
    }

    /// `credential` goes out again for `space` because the server only renewed its nonce (`stale=true`): not a
    /// failure of the credential.
    func resending(_ credential: URLCredential, for space: AuthenticationQuestion.Space, to url: URL? = nil) {
        state.withLockedValue { state in
            state.staleResends[space, default: 0] += 1
            state.inFlight = (space, credential, url)
        }
    }

    /// How many times a credential went out again for `space` after a `stale=true` challenge.
    func staleResends(for space: AuthenticationQuestion.Space) -> Int {
        state.withLockedValue { $0.staleResends[space] ?? 0 }
    }

    /// The next nonce count for `nonce` (1 for a new nonce).
    func nextNonceCount(for nonce: String) -> Int {
        state.withLockedValue { state in
            state.nonceCounts[nonce, default: 0] += 1
            return state.nonceCounts[nonce]!
        }
    }

    /// Whether a credential went out with the current attempt.
    var hasCredentialInFlight: Bool { state.withLockedValue { $0.inFlight != nil } }

    /// The credential of the current attempt and the URL it went to, forgotten as it is handed out (a response
    /// answers it once).
    func takeCredentialInFlight() -> (space: AuthenticationQuestion.Space, credential: URLCredential, url: URL?)? {
        state.withLockedValue { state in
            defer { state.inFlight = nil }
            return state.inFlight
        }
    }
}
