import Foundation

/// An HTTP authentication challenge (401 or 407) a background transfer met, as the daemon asks the attached app
/// about it, and the app's answer. Passwords cross only the user's private socket; the daemon never writes them to
/// its journal or log.
package struct BackgroundChallenge: Codable, Sendable, Equatable {
    package var id: UInt64
    package var task: Int
    package var host: String
    package var port: Int
    /// The scheme (`http`, `https`), or for a proxy its type.
    package var protocolName: String?
    package var realm: String?
    package var authenticationMethod: String
    package var isProxy: Bool
    package var previousFailureCount: Int
    package var proposedUser: String?
    package var proposedPassword: String?
    package var failureResponse: CodableResponse?

    package init(id: UInt64, task: Int, challenge: URLAuthenticationChallenge) {
        let space = challenge.protectionSpace
        self.id = id
        self.task = task
        host = space.host
        port = space.port
        isProxy = space.isProxy()
        protocolName = isProxy ? space.proxyType : space.protocol
        realm = space.realm
        authenticationMethod = space.authenticationMethod
        previousFailureCount = challenge.previousFailureCount
        proposedUser = challenge.proposedCredential?.user
        proposedPassword = challenge.proposedCredential?.password
        failureResponse = challenge.failureResponse.map(CodableResponse.init)
    }

    /// The protection space the app's delegate sees.
    package var protectionSpace: URLProtectionSpace {
        isProxy
            ? URLProtectionSpace(
                proxyHost: host, port: port, type: protocolName, realm: realm,
                authenticationMethod: authenticationMethod)
            : URLProtectionSpace(
                host: host, port: port, protocol: protocolName, realm: realm, authenticationMethod: authenticationMethod
            )
    }

    /// The challenge the app's delegate sees; `proposing` (the app's stored credential) replaces the daemon's
    /// proposal.
    func challenge(
        sender: any URLAuthenticationChallengeSender, proposing stored: URLCredential? = nil
    ) -> URLAuthenticationChallenge {
        URLAuthenticationChallenge(
            protectionSpace: protectionSpace,
            proposedCredential: stored
                ?? proposedUser.map {
                    URLCredential(user: $0, password: proposedPassword ?? "", persistence: .forSession)
                },
            previousFailureCount: previousFailureCount,
            failureResponse: failureResponse?.response,
            error: nil,
            sender: sender
        )
    }
}

/// The app's answer to a ``BackgroundChallenge``.
package struct BackgroundChallengeAnswer: Codable, Sendable, Equatable {
    /// `URLSession.AuthChallengeDisposition`'s raw value.
    package var disposition: Int
    package var user: String?
    package var password: String?
    /// `URLCredential.Persistence`'s raw value.
    package var persistence: UInt

    package init(disposition: URLSession.AuthChallengeDisposition, credential: URLCredential?) {
        self.disposition = disposition.rawValue
        user = credential?.user
        password = credential?.password
        persistence = credential?.persistence.rawValue ?? URLCredential.Persistence.none.rawValue
    }

    package var resolvedDisposition: URLSession.AuthChallengeDisposition {
        URLSession.AuthChallengeDisposition(rawValue: disposition) ?? .performDefaultHandling
    }

    /// The credential, when the answer carries a user name and password.
    package var credential: URLCredential? {
        guard let user else { return nil }
        return URLCredential(
            user: user, password: password ?? "",
            persistence: URLCredential.Persistence(rawValue: persistence) ?? .forSession)
    }
}
