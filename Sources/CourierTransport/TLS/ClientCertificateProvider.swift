import CourierHTTP
import NIOSSL

/// A client certificate and its private key, as a connection presents them to a server that asks for one.
public struct ClientIdentity: Hashable, Sendable {
    /// The chain, leaf first.
    public var certificateChain: [NIOSSLCertificate]
    /// The leaf's private key.
    public var privateKey: NIOSSLPrivateKey

    /// Creates an identity.
    public init(certificateChain: [NIOSSLCertificate], privateKey: NIOSSLPrivateKey) {
        self.certificateChain = certificateChain
        self.privateKey = privateKey
    }
}

/// Chooses, above the transport, the certificate a connection presents when the server asks for one.
///
/// Asked only when a server's handshake requests a certificate (a TLS `CertificateRequest`), once per
/// connection, off the event loop; it may take as long as it needs (for example to ask a session delegate about a
/// client-certificate challenge). The connection's handshake timeout still applies.
public protocol ClientCertificateProvider: AnyObject, Sendable {
    /// The certificate to present to `host`:`port`, which are the ones the request named.
    func clientIdentity(host: String, port: Int) async -> ClientIdentityDecision
}

/// A ``ClientCertificateProvider``'s answer.
public enum ClientIdentityDecision: Sendable, Equatable {
    /// Present this certificate.
    case present(ClientIdentity)
    /// Continue the handshake without a certificate; the server decides whether that is enough.
    case continueWithout
    /// Fail the connection with this error (`cancelled` when the app cancelled the challenge).
    case reject(TransferError)
}
