import Crypto
import Foundation
import NIOCore
import NIOSSL
import SwiftASN1
import X509

/// A freshly generated P-256 key and self-signed certificate for `localhost`, `127.0.0.1` and `::1`,
/// and the TLS server context that uses them.
struct SelfSignedIdentity: Sendable {
    /// The certificate, PEM encoded.
    let certificatePEM: String
    /// The certificate, DER encoded.
    let certificateDER: [UInt8]
    /// A TLS server context with this identity, offering the ALPN protocols it was made with, that waits at most
    /// 250 ms for the peer's `close_notify` when closing.
    let sslContext: NIOSSLContext

    /// Presents `custom`'s chain and key (``certificateDER`` is its leaf), offering `applicationProtocols` by ALPN.
    init(custom: MockTLSIdentity, applicationProtocols: [String]) throws {
        let chain = try custom.certificateChainDER.map { try NIOSSLCertificate(bytes: $0, format: .der) }
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(custom.privateKeyPEM.utf8), format: .pem))
        )
        configuration.applicationProtocols = applicationProtocols
        configuration.shutdownTimeout = .milliseconds(250)
        if !custom.requiredClientCertificateAuthoritiesDER.isEmpty {
            let authorities = try custom.requiredClientCertificateAuthoritiesDER.map {
                try NIOSSLCertificate(bytes: $0, format: .der)
            }
            configuration.certificateVerification = .noHostnameVerification
            configuration.trustRoots = .certificates(authorities)
            configuration.sendCANameList = true
        }
        let leaf = custom.certificateChainDER.first ?? []
        self.certificateDER = leaf
        self.certificatePEM = try Certificate(derEncoded: leaf).serializeAsPEM().pemString
        self.sslContext = try NIOSSLContext(configuration: configuration)
    }

    /// Generates a key and a certificate valid from an hour ago to a day from now, offering `applicationProtocols` by
    /// ALPN.
    init(applicationProtocols: [String]) throws {
        let key = P256.Signing.PrivateKey()
        let certificateKey = Certificate.PrivateKey(key)
        let name = try DistinguishedName {
            OrganizationName("Courier MockServer")
            CommonName("127.0.0.1")
        }
        let extensions = try Certificate.Extensions {
            Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
            Critical(KeyUsage(digitalSignature: true, keyCertSign: true))
            try ExtendedKeyUsage([.serverAuth])
            SubjectAlternativeNames([
                .dnsName("localhost"),
                .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1])),
                .ipAddress(ASN1OctetString(contentBytes: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1])),
            ])
        }
        let now = Date()
        let certificate = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: certificateKey.publicKey,
            notValidBefore: now.addingTimeInterval(-3600),
            notValidAfter: now.addingTimeInterval(24 * 3600),
            issuer: name,
            subject: name,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: extensions,
            issuerPrivateKey: certificateKey
        )
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        let der = serializer.serializedBytes

        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(try NIOSSLCertificate(bytes: der, format: .der))],
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(key.pemRepresentation.utf8), format: .pem))
        )
        configuration.applicationProtocols = applicationProtocols
        // Do not wait long for a peer's close_notify: shutdown() must be quick even when a client stopped reading.
        configuration.shutdownTimeout = .milliseconds(250)

        self.certificateDER = der
        self.certificatePEM = try certificate.serializeAsPEM().pemString
        self.sslContext = try NIOSSLContext(configuration: configuration)
    }
}
