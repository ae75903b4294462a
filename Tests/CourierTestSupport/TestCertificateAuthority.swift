import Courier
import CourierMockServer
import Crypto
import Foundation
import SwiftASN1
import X509

/// Certificates made for a test: a CA, and leaves it signs for chosen names and validity periods. Shared by the
/// test targets (a test-only module, not a product).
public struct TestCertificateAuthority: Sendable {
    public let key: P256.Signing.PrivateKey
    public let certificate: Certificate
    public let name: DistinguishedName

    /// A self-signed root CA.
    public init(commonName: String = "Courier Test CA") throws {
        try self.init(commonName: commonName, issuer: nil)
    }

    /// A CA that `issuer` signs, or a self-signed root when `issuer` is `nil`.
    private init(commonName: String, issuer: TestCertificateAuthority?) throws {
        key = P256.Signing.PrivateKey()
        name = try DistinguishedName { CommonName(commonName) }
        let privateKey = Certificate.PrivateKey(key)
        let now = Date()
        certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: privateKey.publicKey,
            notValidBefore: now.addingTimeInterval(-86_400), notValidAfter: now.addingTimeInterval(365 * 86_400),
            issuer: issuer?.name ?? name, subject: name, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true))
            },
            issuerPrivateKey: issuer.map { Certificate.PrivateKey($0.key) } ?? privateKey)
    }

    /// An intermediate CA this one signs.
    public func intermediate(commonName: String = "Courier Test Intermediate") throws -> TestCertificateAuthority {
        try TestCertificateAuthority(commonName: commonName, issuer: self)
    }

    /// A server certificate for `dnsNames` and `ipAddresses` (IPv4 dotted), valid between the given offsets from now.
    public func leaf(
        commonName: String = "server", dnsNames: [String] = ["localhost"], ipAddresses: [[UInt8]] = [[127, 0, 0, 1]],
        validFrom: TimeInterval = -3600, validUntil: TimeInterval = 86_400,
        usage: ExtendedKeyUsage.Usage = .serverAuth, reusing existingKey: P256.Signing.PrivateKey? = nil
    ) throws -> (certificate: Certificate, key: P256.Signing.PrivateKey) {
        let leafKey = existingKey ?? P256.Signing.PrivateKey()
        let now = Date()
        let names =
            dnsNames.map { GeneralName.dnsName($0) }
            + ipAddresses.map { GeneralName.ipAddress(ASN1OctetString(contentBytes: $0[...])) }
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PrivateKey(leafKey).publicKey,
            notValidBefore: now.addingTimeInterval(validFrom), notValidAfter: now.addingTimeInterval(validUntil),
            issuer: name, subject: try DistinguishedName { CommonName(commonName) },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([usage])
                SubjectAlternativeNames(names)
            },
            issuerPrivateKey: Certificate.PrivateKey(key))
        return (certificate, leafKey)
    }
}

extension Certificate {
    /// The certificate's DER encoding.
    public var derData: Data {
        var serializer = DER.Serializer()
        try! serializer.serialize(self)
        return Data(serializer.serializedBytes)
    }
}

extension TestCertificateAuthority {
    /// A server identity with a leaf this CA signs (and the CA in the chain).
    public func serverIdentity(
        dnsNames: [String] = ["localhost"], ipAddresses: [[UInt8]] = [[127, 0, 0, 1]], validFrom: TimeInterval = -3600,
        validUntil: TimeInterval = 86_400
    ) throws -> MockTLSIdentity {
        let (leaf, key) = try self.leaf(
            dnsNames: dnsNames, ipAddresses: ipAddresses, validFrom: validFrom, validUntil: validUntil)
        return MockTLSIdentity(
            certificateChainDER: [Array(leaf.derData), Array(certificate.derData)], privateKeyPEM: key.pemRepresentation
        )
    }

    /// A client certificate this CA signs, as an identity for `URLCredential(identity:certificates:persistence:)`,
    /// and the leaf's DER (what the server records).
    public func clientIdentity(commonName: String = "client") throws -> (identity: SecIdentity, leafDER: [UInt8]) {
        let (leaf, key) = try self.leaf(commonName: commonName, dnsNames: [], ipAddresses: [], usage: .clientAuth)
        let identity = try SecIdentity.courierIdentity(
            certificateChainPEM: try leaf.serializeAsPEM().pemString, privateKeyPEM: key.pemRepresentation)
        return (identity, Array(leaf.derData))
    }

    /// A server identity (for `127.0.0.1` and `localhost`) that requires a client certificate from `clients`.
    public func serverIdentity(requiringClientsOf clients: TestCertificateAuthority) throws -> MockTLSIdentity {
        var identity = try serverIdentity()
        identity.requiredClientCertificateAuthoritiesDER = [Array(clients.certificate.derData)]
        return identity
    }
}
