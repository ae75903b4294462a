import CourierTestSupport
import Crypto
import Foundation
import Testing
import X509

@testable import Courier

/// The roots an evaluation trusts, as the verifier looks them up: anchors first, then the system's and the session's
/// unless the anchors alone count.
@Suite("TrustRootStore")
struct TrustRootStoreTests {
    private func settings(anchors: [Certificate]?, anchorsOnly: Bool?, additional: [Certificate]) -> SecTrust.Settings {
        var settings = SecTrust.Settings(
            policy: SecPolicy(server: true, hostname: "example.test"),
            additionalRoots: additional.map { SecCertificate(derData: $0.derData) })
        settings.anchors = anchors?.map { SecCertificate(derData: $0.derData) }
        settings.anchorsOnly = anchorsOnly
        return settings
    }

    @Test func anchorsAloneCountOnceSetUnlessToldOtherwise() async throws {
        let anchor = try TestCertificateAuthority(commonName: "Anchor")
        let additional = try TestCertificateAuthority(commonName: "Additional")
        // A machine without a CA bundle has no system roots; the rest still holds.
        let systemRoot = SystemTrustRoots.certificates.first

        let anchorsOnly = TrustRootStore(
            settings(anchors: [anchor.certificate], anchorsOnly: nil, additional: [additional.certificate]))
        #expect(anchorsOnly.containsRoot(anchor.certificate))
        #expect(!anchorsOnly.containsRoot(additional.certificate))

        let all = TrustRootStore(
            settings(anchors: [anchor.certificate], anchorsOnly: false, additional: [additional.certificate]))
        #expect(all.containsRoot(anchor.certificate))
        #expect(all.containsRoot(additional.certificate))
        #expect(await all.contains(additional.certificate))

        let noAnchors = TrustRootStore(settings(anchors: nil, anchorsOnly: nil, additional: []))
        #expect(!noAnchors.containsRoot(anchor.certificate))

        if let systemRoot {
            #expect(!anchorsOnly.containsRoot(systemRoot))
            #expect(await anchorsOnly[systemRoot.subject] == nil)
            #expect(all.containsRoot(systemRoot))
            #expect(noAnchors.containsRoot(systemRoot))
            // Under one name: the anchor's certificate, then the system's roots, then the session's.
            let namedAnchor = try selfSigned(systemRoot.subject)
            let namedAdditional = try selfSigned(systemRoot.subject)
            let ordered = TrustRootStore(
                settings(anchors: [namedAnchor], anchorsOnly: false, additional: [namedAdditional]))
            let found = await ordered[systemRoot.subject] ?? []
            #expect(found.first == namedAnchor)
            #expect(found.last == namedAdditional)
            #expect(found.dropFirst().dropLast() == (SystemTrustRoots.bySubject[systemRoot.subject] ?? [])[...])
        }
    }

    /// A self-signed certificate named `name`.
    private func selfSigned(_ name: DistinguishedName) throws -> Certificate {
        let key = Certificate.PrivateKey(P256.Signing.PrivateKey())
        let now = Date()
        return try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: key.publicKey,
            notValidBefore: now.addingTimeInterval(-60), notValidAfter: now.addingTimeInterval(3600), issuer: name,
            subject: name, signatureAlgorithm: .ecdsaWithSHA256, extensions: Certificate.Extensions(),
            issuerPrivateKey: key)
    }

    @Test func aSubjectsRootsComeAnchorsFirstAndAppendedOnesCountAlways() async throws {
        // Two different certificates under one name: the anchor's and the session's.
        let anchor = try TestCertificateAuthority(commonName: "Same Name")
        let additional = try TestCertificateAuthority(commonName: "Same Name")
        var store = TrustRootStore(
            settings(anchors: [anchor.certificate], anchorsOnly: false, additional: [additional.certificate]))
        #expect(await store[anchor.name] == [anchor.certificate, additional.certificate])

        var anchorsOnly = TrustRootStore(settings(anchors: [], anchorsOnly: nil, additional: []))
        #expect(await anchorsOnly[anchor.name] == nil)
        anchorsOnly.append(contentsOf: [anchor.certificate])
        #expect(anchorsOnly.containsRoot(anchor.certificate))
        store.append(contentsOf: [anchor.certificate])
        #expect(await store[anchor.name]?.count == 3)
    }
}
