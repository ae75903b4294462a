import Courier
import CourierMockServer
import Crypto
import Foundation
import SwiftASN1
import X509

/// Certificates made for a test: a CA, and leaves it signs for chosen names and validity periods.
struct TestCertificateAuthority {
    let key = P256.Signing.PrivateKey()
    let certificate: Certificate
    let name: DistinguishedName

    init(commonName: String = "Courier Test CA") throws {
        name = try DistinguishedName { CommonName(commonName) }
        let privateKey = Certificate.PrivateKey(key)
        let now = Date()
        certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: privateKey.publicKey,
            notValidBefore: now.addingTimeInterval(-86_400), notValidAfter: now.addingTimeInterval(365 * 86_400),
            issuer: name, subject: name, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true))
            },
            issuerPrivateKey: privateKey)
    }

    /// A server certificate for `dnsNames` and `ipAddresses` (IPv4 dotted), valid between the given offsets from now.
    func leaf(
        commonName: String = "server", dnsNames: [String] = ["localhost"], ipAddresses: [[UInt8]] = [[127, 0, 0, 1]],
        validFrom: TimeInterval = -3600, validUntil: TimeInterval = 86_400,
        usage: ExtendedKeyUsage.Usage = .serverAuth
    ) throws -> (certificate: Certificate, key: P256.Signing.PrivateKey) {
        let leafKey = P256.Signing.PrivateKey()
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
    var derData: Data {
        var serializer = DER.Serializer()
        try! serializer.serialize(self)
        return Data(serializer.serializedBytes)
    }
}

extension TestCertificateAuthority {
    /// A server identity with a leaf this CA signs (and the CA in the chain).
    func serverIdentity(
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
    func clientIdentity(commonName: String = "client") throws -> (identity: SecIdentity, leafDER: [UInt8]) {
        let (leaf, key) = try self.leaf(commonName: commonName, dnsNames: [], ipAddresses: [], usage: .clientAuth)
        let identity = try SecIdentity.courierIdentity(
            certificateChainPEM: try leaf.serializeAsPEM().pemString, privateKeyPEM: key.pemRepresentation)
        return (identity, Array(leaf.derData))
    }

    /// A server identity (for `127.0.0.1` and `localhost`) that requires a client certificate from `clients`.
    func serverIdentity(requiringClientsOf clients: TestCertificateAuthority) throws -> MockTLSIdentity {
        var identity = try serverIdentity()
        identity.requiredClientCertificateAuthoritiesDER = [Array(clients.certificate.derData)]
        return identity
    }
}
