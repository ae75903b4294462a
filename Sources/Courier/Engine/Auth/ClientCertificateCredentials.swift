import CourierTransport
import Foundation
import NIOSSL

/// Where client certificates come from: identity credentials in a protection space of
/// `NSURLAuthenticationMethodClientCertificate`, whether a delegate answers with one or a credential storage holds
/// one as the space's default.
enum ClientCertificateCredentials {
    /// The protection space of a client certificate challenge from `host`:`port`.
    ///
    /// `distinguishedNames` is empty: NIOSSL does not expose the certificate authorities the server named.
    static func space(host: String, port: Int) -> URLProtectionSpace {
        URLProtectionSpace(
            host: host, port: port, protocol: NSURLProtectionSpaceHTTPS, realm: nil,
            authenticationMethod: NSURLAuthenticationMethodClientCertificate, serverTrust: nil, distinguishedNames: [])
    }

    /// Presents an identity credential's certificate, else none.
    static func decision(presenting credential: URLCredential?) -> ClientIdentityDecision {
        guard let credential, let identity = credential.identity else { return .continueWithout }
        return .present(clientIdentity(of: identity, intermediates: credential.certificates))
    }

    /// The identity's leaf and key with the credential's intermediates, or the identity's own chain when the
    /// credential names none.
    static func clientIdentity(of identity: SecIdentity, intermediates: [Any]) -> ClientIdentity {
        let extra = intermediates.compactMap { ($0 as? SecCertificate)?.derData }
            .compactMap { try? NIOSSLCertificate(bytes: Array($0), format: .der) }
        guard !extra.isEmpty, let leaf = identity.clientIdentity.certificateChain.first else {
            return identity.clientIdentity
        }
        return ClientIdentity(certificateChain: [leaf] + extra, privateKey: identity.clientIdentity.privateKey)
    }

    /// The TLS settings of a request from a session without a delegate: with the storage's default identity for the
    /// request's origin, presented if the server asks. Storages that never held an identity cost one check.
    static func settings(_ settings: TLSSettings, for url: URL, storage: URLCredentialStorage?) -> TLSSettings {
        identitySettings(settings, for: url, storage: storage) ?? settings
    }

    /// `settings` with the identity the storage holds for `url`'s protection space, or `nil` when it holds none
    /// (most requests: the caller then keeps the settings it shares, without comparing them).
    static func identitySettings(_ settings: TLSSettings, for url: URL, storage: URLCredentialStorage?) -> TLSSettings?
    {
        guard let storage, storage.holdsIdentities, let endpoint = try? Endpoint(url: url), endpoint.scheme == .https,
            let credential = storage.defaultCredential(for: space(host: endpoint.host, port: endpoint.port)),
            let identity = credential.identity
        else { return nil }
        var settings = settings
        settings.clientIdentity = clientIdentity(of: identity, intermediates: credential.certificates)
        return settings
    }
}
