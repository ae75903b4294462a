import Foundation

/// The interface an object that sent an authentication challenge implements, to hear how the challenge is answered.
///
/// On Apple platforms ``performDefaultHandling(for:)`` and ``rejectProtectionSpaceAndContinue(with:)`` are optional
/// Objective-C requirements; in Courier they are requirements with default implementations that cancel the challenge.
public protocol URLAuthenticationChallengeSender: NSObjectProtocol, Sendable {
    /// Answers the challenge with a credential.
    ///
    /// - Parameters:
    ///   - credential: The credential to use.
    ///   - challenge: The challenge.
    func use(_ credential: URLCredential, for challenge: URLAuthenticationChallenge)

    /// Answers the challenge by trying to continue without a credential.
    ///
    /// - Parameter challenge: The challenge.
    func continueWithoutCredential(for challenge: URLAuthenticationChallenge)

    /// Cancels the challenge and the request that caused it.
    ///
    /// - Parameter challenge: The challenge.
    func cancel(_ challenge: URLAuthenticationChallenge)

    /// Answers the challenge as if the delegate did not handle it.
    ///
    /// - Parameter challenge: The challenge.
    func performDefaultHandling(for challenge: URLAuthenticationChallenge)

    /// Rejects the challenge's protection space and lets the next one be tried.
    ///
    /// - Parameter challenge: The challenge.
    func rejectProtectionSpaceAndContinue(with challenge: URLAuthenticationChallenge)
}

extension URLAuthenticationChallengeSender {
    /// Cancels the challenge.
    ///
    /// - Parameter challenge: The challenge.
    public func performDefaultHandling(for challenge: URLAuthenticationChallenge) {
        cancel(challenge)
    }

    /// Cancels the challenge.
    ///
    /// - Parameter challenge: The challenge.
    public func rejectProtectionSpaceAndContinue(with challenge: URLAuthenticationChallenge) {
        cancel(challenge)
    }
}
