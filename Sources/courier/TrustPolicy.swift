import Courier
import Crypto
import Foundation
import SwiftASN1
import X509

/// How `courier` answers a server-trust challenge: `-k` accepts any certificate, `--cacert` trusts only the given
/// certificate authorities, `--pin` requires the server's public key to hash to one of the given SHA-256 values
/// (curl's `--pinnedpubkey sha256//…`). Without any of them the challenge gets default handling: the system's trust
/// store decides, and Courier reports the `URLError` Darwin would.
struct TrustPolicy: Sendable {
    enum Verdict {
        case accept(URLCredential)
        case defaultHandling
        /// The connection is refused; `exitStatus` and `reason` say why.
        case reject(reason: String, exitStatus: Int32)
    }

    var insecure = false
    /// DER certificates from `--cacert`.
    var anchors: [Data] = []
    /// SHA-256 digests of SubjectPublicKeyInfo structures, from `--pin`.
    var pins: [Data] = []

    var isDefault: Bool { !insecure && anchors.isEmpty && pins.isEmpty }

    /// The answer for `trust`, presented by `host`. Evaluates the chain (blocking file and CPU work: call it on the
    /// delegate queue, as the challenge is).
    func verdict(for trust: SecTrust, host: String) -> Verdict {
        if isDefault { return .defaultHandling }
        if !anchors.isEmpty {
            let certificates = anchors.compactMap { SecCertificateCreateWithData(nil, $0) }
            SecTrustSetAnchorCertificates(trust, certificates)
            SecTrustSetAnchorCertificatesOnly(trust, true)
        }
        var error: NSError?
        // -k skips the chain, never a --pin (as curl: the pin is checked even when the chain is not).
        guard insecure || SecTrustEvaluateWithError(trust, &error) else {
            return .reject(
                reason: "the certificate of \(host) is not trusted: \(error?.localizedDescription ?? "unknown reason")",
                exitStatus: ExitStatus.untrustedCertificate)
        }
        if !pins.isEmpty {
            let leaf = (SecTrustCopyCertificateChain(trust) as? [SecCertificate])?.first
            guard let leaf, let digest = Self.publicKeyDigest(of: SecCertificateCopyData(leaf)), pins.contains(digest)
            else {
                return .reject(
                    reason: "the public key of \(host) matches no --pin", exitStatus: ExitStatus.pinnedKeyMismatch)
            }
        }
        return .accept(URLCredential(trust: trust))
    }

    /// SHA-256 of the certificate's DER SubjectPublicKeyInfo: what `--pin sha256//…` (and curl's `--pinnedpubkey`,
    /// and `openssl x509 -pubkey | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64`) name.
    static func publicKeyDigest(of certificateDER: Data) -> Data? {
        guard let certificate = try? Certificate(derEncoded: Array(certificateDER)) else { return nil }
        var serializer = DER.Serializer()
        guard (try? serializer.serialize(certificate.publicKey)) != nil else { return nil }
        return Data(SHA256.hash(data: serializer.serializedBytes))
    }

    /// The digests of a `--pin` value: `sha256//BASE64`, several joined with `;`. Throws a message for anything else.
    static func parsePins(_ value: String) throws -> [Data] {
        try value.split(separator: ";").map { item in
            let text = item.trimmingCharacters(in: .whitespaces)
            guard text.hasPrefix("sha256//"), let digest = Data(base64Encoded: String(text.dropFirst(8))),
                digest.count == 32
            else {
                throw CLIError("--pin takes sha256//BASE64 (a base64 SHA-256 digest), not \(text)", exitCode: 2)
            }
            return digest
        }
    }

    /// The certificates of a `--cacert` file: PEM (any number of `CERTIFICATE` blocks) or one DER certificate.
    static func loadCertificates(path: String) throws -> [Data] {
        guard let contents = FileManager.default.contents(atPath: path) else {
            throw CLIError("cannot read --cacert \(path)", exitCode: ExitStatus.caCertificateUnreadable)
        }
        let text = String(decoding: contents, as: UTF8.self)
        if text.contains("-----BEGIN CERTIFICATE-----") {
            let blocks = text.components(separatedBy: "-----BEGIN CERTIFICATE-----").dropFirst()
            let certificates = blocks.compactMap { block -> Data? in
                guard let end = block.range(of: "-----END CERTIFICATE-----") else { return nil }
                let base64 = block[..<end.lowerBound].filter { !$0.isWhitespace }
                return Data(base64Encoded: String(base64))
            }.filter { SecCertificateCreateWithData(nil, $0) != nil }
            guard !certificates.isEmpty else {
                throw CLIError("no certificate in --cacert \(path)", exitCode: ExitStatus.caCertificateUnreadable)
            }
            return certificates
        }
        guard SecCertificateCreateWithData(nil, contents) != nil else {
            throw CLIError(
                "--cacert \(path) holds no PEM or DER certificate", exitCode: ExitStatus.caCertificateUnreadable)
        }
        return [contents]
    }
}
