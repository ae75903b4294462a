import Foundation

/// A challenge from a server, or the TLS layer, that requires authentication from the client.
open class URLAuthenticationChallenge: NSObject, @unchecked Sendable {
    private let storedProtectionSpace: URLProtectionSpace
    private let storedProposedCredential: URLCredential?
    private let storedPreviousFailureCount: Int
    private let storedFailureResponse: URLResponse?
    private let storedError: (any Error)?
    private let storedSender: (any URLAuthenticationChallengeSender)?
    /// For a connection-level challenge (server trust, client certificate): the task the connection is opened for,
    /// whose delegate Darwin asks when the session's delegate does not implement the session-level method. Set once,
    /// before the challenge is shared.
    weak var connectionTask: URLSessionTask?

    /// Creates a challenge.
    ///
    /// - Parameters:
    ///   - space: The protection space that requires authentication.
    ///   - credential: A proposed credential, or `nil`.
    ///   - previousFailureCount: How many times authentication has failed for this protection space.
    ///   - response: The response that caused the challenge, or `nil`.
    ///   - error: The error of the last failed attempt, or `nil`.
    ///   - sender: The object answers are sent to.
    public init(
        protectionSpace space: URLProtectionSpace, proposedCredential credential: URLCredential?,
        previousFailureCount: Int, failureResponse response: URLResponse?, error: (any Error)?,
        sender: any URLAuthenticationChallengeSender
    ) {
        storedProtectionSpace = space
        storedProposedCredential = credential
        storedPreviousFailureCount = previousFailureCount
        storedFailureResponse = response
        storedError = error
        storedSender = sender
        super.init()
    }

    /// Creates a copy of a challenge with a different sender.
    ///
    /// - Parameters:
    ///   - challenge: The challenge to copy.
    ///   - sender: The new sender.
    public init(
        authenticationChallenge challenge: URLAuthenticationChallenge, sender: any URLAuthenticationChallengeSender
    ) {
        storedProtectionSpace = challenge.protectionSpace
        storedProposedCredential = challenge.proposedCredential
        storedPreviousFailureCount = challenge.previousFailureCount
        storedFailureResponse = challenge.failureResponse
        storedError = challenge.error
        storedSender = sender
        super.init()
    }

    /// The protection space that requires authentication.
    open var protectionSpace: URLProtectionSpace { storedProtectionSpace }

    /// The proposed credential, or `nil`.
    open var proposedCredential: URLCredential? { storedProposedCredential }

    /// How many times authentication has failed for this protection space.
    open var previousFailureCount: Int { storedPreviousFailureCount }

    /// The response of the last failed authentication attempt, or `nil`.
    open var failureResponse: URLResponse? { storedFailureResponse }

    /// The error of the last failed authentication attempt, or `nil`.
    open var error: (any Error)? { storedError }

    /// The object that sent the challenge.
    open var sender: (any URLAuthenticationChallengeSender)? { storedSender }
}
