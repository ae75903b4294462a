import Courier
import CourierTestSupport
import Crypto
import Foundation
import Testing
import X509

/// The Security subset on Linux: certificates, keys and `SecTrustEvaluateWithError` against anchors, dates and host
/// names, with Darwin's error codes.
@Suite("SecTrust")
struct SecTrustTests {
    private func trust(_ chain: [Certificate], host: String?) throws -> SecTrust {
        let certificates = try chain.map { try #require(SecCertificateCreateWithData(nil, $0.derData)) }
        var trust: SecTrust?
        #expect(SecTrustCreateWithCertificates(certificates, SecPolicyCreateSSL(true, host), &trust) == errSecSuccess)
        return try #require(trust)
    }

    private func evaluate(_ trust: SecTrust) -> (Bool, Int?) {
        var error: NSError?
        let trusted = SecTrustEvaluateWithError(trust, &error)
        #expect(trusted == (error == nil))
        if let error { #expect(error.domain == NSURLErrorDomain) }
        return (trusted, error?.code)
    }

    @Test func certificatesRoundTripAndSummarize() throws {
        let authority = try TestCertificateAuthority(commonName: "Summary CA")
        let data = authority.certificate.derData
        let certificate = try #require(SecCertificateCreateWithData(nil, data))
        #expect(SecCertificateCopyData(certificate) == data)
        #expect(SecCertificateCopySubjectSummary(certificate) == "Summary CA")
        #expect(SecCertificateCreateWithData(nil, Data("not a certificate".utf8)) == nil)
        #expect(SecCertificateCreateWithData(nil, Data()) == nil)
    }

    /// The external representation is the EC point, as on Darwin, so SPKI pins computed the Darwin way match.
    @Test func keysExportTheirPoint() throws {
        let authority = try TestCertificateAuthority()
        let (leaf, leafKey) = try authority.leaf()
        let trust = try trust([leaf, authority.certificate], host: "localhost")
        let key = try #require(SecTrustCopyKey(trust))
        #expect(SecKeyCopyExternalRepresentation(key, nil) == leafKey.publicKey.x963Representation)
        let chain = try #require(SecTrustCopyCertificateChain(trust) as? [SecCertificate])
        #expect(chain.count == 2 && SecTrustGetCertificateCount(trust) == 2)
        #expect(
            SecCertificateCopyKey(chain[1]).flatMap { SecKeyCopyExternalRepresentation($0, nil) }
                == authority.key.publicKey.x963Representation)
    }

    @Test func aChainToAnAnchorIsTrustedForItsNames() throws {
        let authority = try TestCertificateAuthority()
        let (leaf, _) = try authority.leaf(dnsNames: ["example.test"], ipAddresses: [[127, 0, 0, 1]])
        let anchor = try #require(SecCertificateCreateWithData(nil, authority.certificate.derData))
        for host in ["example.test", "127.0.0.1", nil] as [String?] {
            let trust = try trust([leaf, authority.certificate], host: host)
            #expect(SecTrustSetAnchorCertificates(trust, [anchor]) == errSecSuccess)
            #expect(evaluate(trust) == (true, nil), "host \(host ?? "none")")
        }
        // The leaf alone, with the CA as anchor, builds the same chain.
        let short = try trust([leaf], host: "example.test")
        _ = SecTrustSetAnchorCertificates(short, [anchor])
        #expect(evaluate(short).0)
    }

    @Test func theEvaluatedChainEndsAtTheAnchorTheServerLeftOut() throws {
        // As on Darwin: after a successful evaluation the chain runs leaf to anchor, so pinning code finds a root the
        // server did not send. Before the fix the chain was the presented leaf alone.
        let authority = try TestCertificateAuthority()
        let (leaf, _) = try authority.leaf(dnsNames: ["example.test"])
        let anchor = try #require(SecCertificateCreateWithData(nil, authority.certificate.derData))
        let trust = try trust([leaf], host: "example.test")
        _ = SecTrustSetAnchorCertificates(trust, [anchor])
        #expect(evaluate(trust) == (true, nil))
        let chain = try #require(SecTrustCopyCertificateChain(trust) as? [SecCertificate])
        #expect(chain.map(SecCertificateCopyData) == [leaf.derData, authority.certificate.derData])
        #expect(SecTrustGetCertificateCount(trust) == 2)
    }

    @Test func aLeafThatIsItselfAnAnchorIsTrustedForItsNamesOnly() throws {
        // Certificate pinning anchors the server's own certificate, which is no CA: Darwin trusts it as it stands.
        let authority = try TestCertificateAuthority()
        let (leaf, _) = try authority.leaf(dnsNames: ["pinned.test", "*.wild.test"], ipAddresses: [[127, 0, 0, 1]])
        let anchor = try #require(SecCertificateCreateWithData(nil, leaf.derData))
        let cases: [(String, Bool)] = [
            ("pinned.test", true), ("127.0.0.1", true), ("a.wild.test", true), ("a.b.wild.test", false),
            ("other.test", false), ("127.0.0.2", false),
        ]
        for (host, trusted) in cases {
            let trust = try trust([leaf, authority.certificate], host: host)
            _ = SecTrustSetAnchorCertificates(trust, [anchor])
            _ = SecTrustSetAnchorCertificatesOnly(trust, true)
            #expect(evaluate(trust).0 == trusted, "host \(host)")
        }
    }

    /// An anchored leaf is checked by the same name rules as any other: a DNS entry that spells an IP address is no
    /// proof for that address, a wildcard needs two labels after it, and trailing dots do not count.
    @Test func anAnchoredLeafsNamesFollowTheUsualRules() throws {
        let authority = try TestCertificateAuthority()
        let (leaf, _) = try authority.leaf(dnsNames: ["127.0.0.2", "*.com", "dotted.test."], ipAddresses: [])
        let anchor = try #require(SecCertificateCreateWithData(nil, leaf.derData))
        let cases: [(String, Bool)] = [
            ("127.0.0.2", false), ("example.com", false), ("dotted.test", true), ("dotted.test.", true),
        ]
        for (host, trusted) in cases {
            let trust = try trust([leaf, authority.certificate], host: host)
            _ = SecTrustSetAnchorCertificates(trust, [anchor])
            _ = SecTrustSetAnchorCertificatesOnly(trust, true)
            #expect(evaluate(trust).0 == trusted, "host \(host)")
        }
    }

    @Test(arguments: [
        ("other.test", URLError.Code.serverCertificateUntrusted), ("127.0.0.2", .serverCertificateUntrusted),
    ])
    func aWrongHostIsUntrusted(host: String, code: URLError.Code) throws {
        let authority = try TestCertificateAuthority()
        let (leaf, _) = try authority.leaf(dnsNames: ["example.test"])
        let trust = try trust([leaf, authority.certificate], host: host)
        _ = SecTrustSetAnchorCertificates(
            trust, [try #require(SecCertificateCreateWithData(nil, authority.certificate.derData))])
        #expect(evaluate(trust) == (false, code.rawValue))
    }

    /// RFC 5280 §4.2.1.6: a certificate with an empty subject carries its names in a critical subject alternative
    /// names extension, which Darwin trusts for those names (or for any, without a host). Before the fix the chain was
    /// checked without the host's policy, the one that understands that extension, and was untrusted (-1202) for any
    /// host, or none.
    @Test func aLeafWithAnEmptySubjectAndCriticalNamesIsTrustedForThem() throws {
        let authority = try TestCertificateAuthority()
        let now = Date()
        let leaf = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PrivateKey(P256.Signing.PrivateKey()).publicKey,
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(86_400),
            issuer: authority.name, subject: DistinguishedName(), signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                Critical(SubjectAlternativeNames([.dnsName("example.test")]))
            },
            issuerPrivateKey: Certificate.PrivateKey(authority.key))
        let anchor = try #require(SecCertificateCreateWithData(nil, authority.certificate.derData))
        // No host: no name to check.
        for host in ["example.test", nil] as [String?] {
            let trust = try trust([leaf, authority.certificate], host: host)
            _ = SecTrustSetAnchorCertificates(trust, [anchor])
            #expect(evaluate(trust) == (true, nil), "host \(host ?? "none")")
        }
        // Another host: refused for the name, not for the chain.
        let other = try trust([leaf, authority.certificate], host: "other.test")
        _ = SecTrustSetAnchorCertificates(other, [anchor])
        var error: NSError?
        #expect(!SecTrustEvaluateWithError(other, &error))
        #expect(error?.code == URLError.Code.serverCertificateUntrusted.rawValue)
        #expect(error?.localizedDescription.contains("not valid for other.test") == true)
    }

    @Test(arguments: [
        (-7200.0, -3600.0, URLError.Code.serverCertificateHasBadDate),
        (3600.0, 7200.0, URLError.Code.serverCertificateNotYetValid),
    ])
    func datesAreChecked(from: TimeInterval, until: TimeInterval, code: URLError.Code) throws {
        let authority = try TestCertificateAuthority()
        let (leaf, _) = try authority.leaf(validFrom: from, validUntil: until)
        let trust = try trust([leaf, authority.certificate], host: "localhost")
        _ = SecTrustSetAnchorCertificates(
            trust, [try #require(SecCertificateCreateWithData(nil, authority.certificate.derData))])
        #expect(evaluate(trust) == (false, code.rawValue))
    }

    /// As after AddTrust's root expired in 2020: the server still sends its CA cross-signed by an old root, and that
    /// root, both expired, while the path to the trusted CA itself is valid, which Darwin trusts. Before the fix any
    /// expired certificate the server sent failed the evaluation (-1201), even one off the path.
    @Test func anExpiredCertificateOffThePathDoesNotSpoilAValidOne() throws {
        let authority = try TestCertificateAuthority(commonName: "New root")
        let (leaf, _) = try authority.leaf(dnsNames: ["example.test"])
        let oldKey = Certificate.PrivateKey(P256.Signing.PrivateKey())
        let oldName = try DistinguishedName { CommonName("Old root") }
        let now = Date()
        let caExtensions = try Certificate.Extensions {
            Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
            Critical(KeyUsage(keyCertSign: true))
        }
        let oldRoot = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: oldKey.publicKey,
            notValidBefore: now.addingTimeInterval(-800 * 86_400), notValidAfter: now.addingTimeInterval(-86_400),
            issuer: oldName, subject: oldName, signatureAlgorithm: .ecdsaWithSHA256, extensions: caExtensions,
            issuerPrivateKey: oldKey)
        let crossSigned = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: authority.certificate.publicKey,
            notValidBefore: now.addingTimeInterval(-800 * 86_400), notValidAfter: now.addingTimeInterval(-86_400),
            issuer: oldName, subject: authority.name, signatureAlgorithm: .ecdsaWithSHA256, extensions: caExtensions,
            issuerPrivateKey: oldKey)
        let trusted = try trust([leaf, crossSigned, oldRoot], host: "example.test")
        _ = SecTrustSetAnchorCertificates(
            trusted, [try #require(SecCertificateCreateWithData(nil, authority.certificate.derData))])
        #expect(evaluate(trusted) == (true, nil))
        // A path that needs the expired certificates still fails for their dates.
        let throughOld = try trust([leaf, crossSigned, oldRoot], host: "example.test")
        _ = SecTrustSetAnchorCertificates(
            throughOld, [try #require(SecCertificateCreateWithData(nil, oldRoot.derData))])
        #expect(evaluate(throughOld) == (false, URLError.Code.serverCertificateHasBadDate.rawValue))
    }

    /// Without the anchor the chain ends in a root nobody trusts; a self-signed leaf is simply untrusted (as Darwin
    /// reports them). Setting the anchors replaces the system's roots unless told otherwise.
    @Test func unknownRootsAndAnchorsOnly() throws {
        let authority = try TestCertificateAuthority()
        let (leaf, _) = try authority.leaf()
        #expect(
            evaluate(try trust([leaf, authority.certificate], host: "localhost"))
                == (false, URLError.Code.serverCertificateHasUnknownRoot.rawValue))
        #expect(
            evaluate(try trust([authority.certificate], host: nil))
                == (false, URLError.Code.serverCertificateUntrusted.rawValue))
        let other = try TestCertificateAuthority(commonName: "Other CA")
        let pinnedToOther = try trust([leaf, authority.certificate], host: "localhost")
        _ = SecTrustSetAnchorCertificates(
            pinnedToOther, [try #require(SecCertificateCreateWithData(nil, other.certificate.derData))])
        #expect(SecTrustSetAnchorCertificatesOnly(pinnedToOther, false) == errSecSuccess)
        #expect(!evaluate(pinnedToOther).0)
    }

    @Test func badArgumentsAreRefused() {
        var trust: SecTrust?
        #expect(SecTrustCreateWithCertificates([SecCertificate](), nil, &trust) == errSecParam)
        #expect(SecTrustCreateWithCertificates("nonsense", nil, &trust) == errSecParam)
        #expect(trust == nil)
    }
}

/// Darwin's usual trust snippets, as written there, compile and work.
@Suite("Darwin trust snippets")
struct DarwinTrustSnippetTests {
    @Test func theUsualSnippetsCompileUnchanged() throws {
        let authority = try TestCertificateAuthority()
        let (leaf, _) = try authority.leaf(dnsNames: ["example.test"])
        let leafData = leaf.derData
        let anchorData = authority.certificate.derData
        // -- As on Darwin:
        let host = "example.test"
        guard let certificate = SecCertificateCreateWithData(nil, leafData as CFData),
            let anchor = SecCertificateCreateWithData(nil, anchorData as CFData)
        else {
            Issue.record("certificates")
            return
        }
        var optionalTrust: SecTrust?
        let policy = SecPolicyCreateSSL(true, host as CFString)
        let status = SecTrustCreateWithCertificates([certificate, anchor] as CFArray, policy, &optionalTrust)
        guard status == errSecSuccess, let trust = optionalTrust else {
            Issue.record("trust")
            return
        }
        SecTrustSetAnchorCertificates(trust, [anchor] as CFArray)
        var error: CFError?
        let trusted = SecTrustEvaluateWithError(trust, &error)
        let chain = SecTrustCopyCertificateChain(trust) as? [SecCertificate]
        let leafBytes = chain.flatMap { $0.first }.map { SecCertificateCopyData($0) as Data }
        // --
        #expect(trusted && error == nil)
        #expect(leafBytes == leafData)
    }
}

/// The older Security functions that code written for Darwin still calls (Alamofire's server-trust evaluators do,
/// in the branches of its availability checks), and keys and certificates that compare by value.
extension SecTrustTests {
    @available(*, deprecated, message: "tests the deprecated functions")
    @Test func theDeprecatedFunctionsAgreeWithTheirReplacements() throws {
        let authority = try TestCertificateAuthority()
        let (leaf, _) = try authority.leaf(dnsNames: ["example.test"])
        let anchor = try #require(SecCertificateCreateWithData(nil, authority.certificate.derData))
        let trusted = try trust([leaf, authority.certificate], host: "example.test")
        SecTrustSetAnchorCertificates(trusted, [anchor])
        var result = SecTrustResultType.invalid
        #expect(SecTrustEvaluate(trusted, &result) == errSecSuccess)
        #expect(result == .unspecified)
        let chain = try #require(SecTrustCopyCertificateChain(trusted) as? [SecCertificate])
        #expect(SecTrustGetCertificateAtIndex(trusted, 0) == chain[0])
        #expect(SecTrustGetCertificateAtIndex(trusted, 1) == anchor)
        #expect(SecTrustGetCertificateAtIndex(trusted, chain.count) == nil)
        #expect(SecTrustCopyPublicKey(trusted) == SecTrustCopyKey(trusted))

        // Another host, and no anchor: not trusted.
        let otherHost = try trust([leaf, authority.certificate], host: "other.test")
        SecTrustSetAnchorCertificates(otherHost, [anchor])
        #expect(SecTrustEvaluate(otherHost, &result) == errSecSuccess)
        #expect(result == .recoverableTrustFailure)
        let unknownRoot = try trust([leaf, authority.certificate], host: "example.test")
        #expect(SecTrustEvaluate(unknownRoot, &result) == errSecSuccess)
        #expect(result == .recoverableTrustFailure)
    }

    @Test func theBasicPolicyChecksTheChainAndNoHost() throws {
        let authority = try TestCertificateAuthority()
        let (leaf, _) = try authority.leaf(dnsNames: ["example.test"])
        let anchor = try #require(SecCertificateCreateWithData(nil, authority.certificate.derData))
        let certificates = try [leaf, authority.certificate].map {
            try #require(SecCertificateCreateWithData(nil, $0.derData))
        }
        var trust: SecTrust?
        #expect(SecTrustCreateWithCertificates(certificates, SecPolicyCreateBasicX509(), &trust) == errSecSuccess)
        let basic = try #require(trust)
        SecTrustSetAnchorCertificates(basic, [anchor])
        #expect(evaluate(basic) == (true, nil))
        // Without the anchor the chain leads nowhere trusted, whatever the host.
        #expect(SecTrustCreateWithCertificates(certificates, SecPolicyCreateBasicX509(), &trust) == errSecSuccess)
        #expect(evaluate(try #require(trust)).0 == false)
    }

    @Test func keysAndCertificatesCompareByValue() throws {
        let authority = try TestCertificateAuthority()
        let (leaf, _) = try authority.leaf()
        let first = try #require(SecCertificateCreateWithData(nil, leaf.derData))
        let second = try #require(SecCertificateCreateWithData(nil, leaf.derData))
        let other = try #require(SecCertificateCreateWithData(nil, authority.certificate.derData))
        #expect(first == second && first !== second)
        #expect(first != other)
        #expect(Set([first, second, other]).count == 2)
        let keys = [first, second, other].compactMap(SecCertificateCopyKey)
        #expect(keys.count == 3)
        #expect(keys[0] == keys[1] && keys[0] != keys[2])
        #expect([keys[2]].contains(try #require(SecCertificateCopyKey(other))))
    }
}
