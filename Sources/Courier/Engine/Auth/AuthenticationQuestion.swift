import CourierHTTP
import Foundation

/// An HTTP authentication challenge (401 or 407) the engine puts to the app, as data: the adapter turns it into a
/// `URLAuthenticationChallenge` for the delegate. Codable, so that a daemon can forward it.
struct AuthenticationQuestion: Sendable, Codable {
    /// The protection space, as plain values.
    struct Space: Sendable, Codable, Hashable {
        var host: String
        var port: Int
        var `protocol`: String?
        var realm: String?
        var authenticationMethod: String
        /// The proxy type, for a 407 (`isProxy()` is then true).
        var proxyType: String?

        init(
            host: String, port: Int, protocol: String?, realm: String?, authenticationMethod: String,
            proxyType: String? = nil
        ) {
            self.host = host
            self.port = port
            self.protocol = `protocol`
            self.realm = realm
            self.authenticationMethod = authenticationMethod
            self.proxyType = proxyType
        }

        init(_ space: URLProtectionSpace) {
            self.init(
                host: space.host, port: space.port, protocol: space.protocol, realm: space.realm,
                authenticationMethod: space.authenticationMethod, proxyType: space.proxyType)
        }

        var protectionSpace: URLProtectionSpace {
            if let proxyType {
                return URLProtectionSpace(
                    proxyHost: host, port: port, type: proxyType, realm: realm,
                    authenticationMethod: authenticationMethod)
            }
            return URLProtectionSpace(
                host: host, port: port, protocol: self.protocol, realm: realm,
                authenticationMethod: authenticationMethod)
        }
    }

    /// A user-and-password credential, as plain values.
    struct Credential: Sendable, Codable, Equatable {
        var user: String
        var password: String
        /// `URLCredential.Persistence`'s raw value.
        var persistence: UInt

        init(user: String, password: String, persistence: URLCredential.Persistence) {
            self.user = user
            self.password = password
            self.persistence = persistence.rawValue
        }

        /// `nil` for a credential without a user and password (a trust or identity credential).
        init?(_ credential: URLCredential?) {
            guard let credential, let user = credential.user, let password = credential.password else { return nil }
            self.init(user: user, password: password, persistence: credential.persistence)
        }

        var urlCredential: URLCredential {
            URLCredential(
                user: user, password: password,
                persistence: URLCredential.Persistence(rawValue: persistence) ?? .forSession)
        }
    }

    var space: Space
    var previousFailureCount: Int
    var proposedCredential: Credential?
    /// The 401 or 407 response.
    var failureResponse: CodableResponse
}
