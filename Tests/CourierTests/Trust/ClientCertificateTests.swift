import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import NIOConcurrencyHelpers
import Testing

/// A session delegate that trusts the server and answers client-certificate challenges as told, recording them.
final class ClientCertificateDelegate: NSObject, URLSessionDelegate, @unchecked Sendable {
    enum Answer {
        case present(SecIdentity)
        case cancel
        case defaultHandling
        case reject
        case passwordCredential
    }

    let answer: Answer
    let challenges = NIOLockedValueBox<[URLAuthenticationChallenge]>([])
    let onDelegateQueue = NIOLockedValueBox<[Bool]>([])

    init(_ answer: Answer) { self.answer = answer }

    func urlSession(
        _ session: URLSession, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        if let trust = challenge.protectionSpace.serverTrust {
            return completionHandler(.useCredential, URLCredential(trust: trust))
        }
        challenges.withLockedValue { $0.append(challenge) }
        onDelegateQueue.withLockedValue { $0.append(OperationQueue.current === session.delegateQueue) }
        switch answer {
        case .present(let identity):
            completionHandler(.useCredential, URLCredential(identity: identity, certificates: nil, persistence: .none))
        case .cancel: completionHandler(.cancelAuthenticationChallenge, nil)
        case .defaultHandling: completionHandler(.performDefaultHandling, nil)
        case .reject: completionHandler(.rejectProtectionSpace, nil)
        case .passwordCredential:
            completionHandler(.useCredential, URLCredential(user: "u", password: "p", persistence: .none))
        }
    }

    var clientCertificateChallenges: [URLAuthenticationChallenge] { challenges.withLockedValue { $0 } }
}

/// Client certificates over loopback TLS against a server that requires one: the challenge, every disposition,
/// the credential storage's default identity, and PKCS #12 archives.
@Suite("Client certificates")
struct ClientCertificateTests {
    /// A server CA, a client CA, and a server that requires a certificate from the client CA.
    struct Setup {
        let serverCA: TestCertificateAuthority
        let clientCA: TestCertificateAuthority
        let serverIdentity: MockTLSIdentity

        init() throws {
            serverCA = try TestCertificateAuthority(commonName: "Server CA")
            clientCA = try TestCertificateAuthority(commonName: "Client CA")
            serverIdentity = try serverCA.serverIdentity(requiringClientsOf: clientCA)
        }

        func session(delegate: (any URLSessionDelegate)?, storage: URLCredentialStorage? = nil) -> URLSession {
            makeSession(delegate: delegate) {
                $0.courierAdditionalTrustedCertificates = [serverCA.certificate.derData]
                if let storage { $0.urlCredentialStorage = storage }
            }
        }
    }

    @Test func theDelegatePresentsAnIdentityAndTheServerReceivesIt() async throws {
        let setup = try Setup()
        let client = try setup.clientCA.clientIdentity()
        try await withServer(.https, tlsIdentity: setup.serverIdentity) { server in
            server.route("/c", response: .ok("hello"))
            let delegate = ClientCertificateDelegate(.present(client.identity))
            let session = setup.session(delegate: delegate)
            let outcome = await session.runDataTask(server.url("/c"))
            #expect(outcome.error == nil)
            #expect(outcome.data == Data("hello".utf8))
            #expect(server.requests.last?.clientCertificateDER == client.leafDER)
            let challenge = try #require(delegate.clientCertificateChallenges.first)
            let space = challenge.protectionSpace
            #expect(space.authenticationMethod == NSURLAuthenticationMethodClientCertificate)
            #expect(space.host == "127.0.0.1" && space.port == server.port && space.protocol == "https")
            #expect(space.distinguishedNames == [] && space.serverTrust == nil && !space.isProxy())
            #expect(challenge.previousFailureCount == 0 && challenge.proposedCredential == nil)
            #expect(delegate.onDelegateQueue.withLockedValue { $0 } == [true])
            // The connection is reused: the server is not asked again, nor the delegate.
            #expect(await session.runDataTask(server.url("/c")).error == nil)
            #expect(delegate.clientCertificateChallenges.count == 1)
            #expect(Set(server.requests.map(\.connectionID)).count == 1)
            session.invalidateAndCancel()
        }
    }

    @Test func overTLS12TheCertificateIsPresentedToo() async throws {
        let setup = try Setup()
        let client = try setup.clientCA.clientIdentity()
        try await withServer(.https, tlsIdentity: setup.serverIdentity) { server in
            server.route("/c", response: .ok("1.2"))
            let delegate = ClientCertificateDelegate(.present(client.identity))
            let session = makeSession(delegate: delegate) {
                $0.courierAdditionalTrustedCertificates = [setup.serverCA.certificate.derData]
                $0.tlsMaximumSupportedProtocolVersion = .TLSv12
            }
            let outcome = await session.runDataTask(server.url("/c"))
            #expect(outcome.error == nil)
            #expect(server.requests.last?.clientCertificateDER == client.leafDER)
            #expect(delegate.clientCertificateChallenges.count == 1)
            session.invalidateAndCancel()
        }
    }

    @Test func aServerThatAsksForNoCertificateRaisesNoChallenge() async throws {
        let setup = try Setup()
        let client = try setup.clientCA.clientIdentity()
        try await withServer(.https, tlsIdentity: try setup.serverCA.serverIdentity()) { server in
            server.route("/c", response: .ok("open"))
            let delegate = ClientCertificateDelegate(.present(client.identity))
            let session = setup.session(delegate: delegate)
            #expect(await session.runDataTask(server.url("/c")).error == nil)
            #expect(delegate.clientCertificateChallenges.isEmpty)
            #expect(server.requests.last?.clientCertificateDER == nil)
            session.invalidateAndCancel()
        }
    }

    @Test func cancellingTheChallengeFailsTheTaskAsCancelled() async throws {
        let setup = try Setup()
        try await withServer(.https, tlsIdentity: setup.serverIdentity) { server in
            server.route("/c", response: .ok("never"))
            let session = setup.session(delegate: ClientCertificateDelegate(.cancel))
            let outcome = await session.runDataTask(server.url("/c"))
            #expect(outcome.urlError?.code == .cancelled)
            #expect(server.requests.isEmpty)
            session.invalidateAndCancel()
        }
    }

    @Test(arguments: [
        ClientCertificateDelegate.Answer.defaultHandling, .reject, .passwordCredential,
    ])
    func withoutAnIdentityTheServerRefusesTheConnection(_ answer: ClientCertificateDelegate.Answer) async throws {
        let setup = try Setup()
        try await withServer(.https, tlsIdentity: setup.serverIdentity) { server in
            server.route("/c", response: .ok("never"))
            let delegate = ClientCertificateDelegate(answer)
            let session = setup.session(delegate: delegate)
            let outcome = await session.runDataTask(server.url("/c"))
            #expect(outcome.urlError?.code == .clientCertificateRequired, "\(String(describing: outcome.error))")
            #expect(delegate.clientCertificateChallenges.count == 1)
            #expect(server.requests.isEmpty)
            session.invalidateAndCancel()
        }
    }

    @Test func aCertificateFromAnotherAuthorityIsRejected() async throws {
        let setup = try Setup()
        let stranger = try TestCertificateAuthority(commonName: "Stranger CA").clientIdentity()
        try await withServer(.https, tlsIdentity: setup.serverIdentity) { server in
            server.route("/c", response: .ok("never"))
            let session = setup.session(delegate: ClientCertificateDelegate(.present(stranger.identity)))
            let outcome = await session.runDataTask(server.url("/c"))
            #expect(outcome.urlError?.code == .clientCertificateRejected, "\(String(describing: outcome.error))")
            #expect(server.requests.isEmpty)
            session.invalidateAndCancel()
        }
    }

    @Test func defaultHandlingPresentsTheStoragesDefaultIdentityWhichIsAlsoProposed() async throws {
        let setup = try Setup()
        let client = try setup.clientCA.clientIdentity()
        try await withServer(.https, tlsIdentity: setup.serverIdentity) { server in
            server.route("/c", response: .ok("stored"))
            let storage = URLCredentialStorage()
            let stored = URLCredential(identity: client.identity, certificates: nil, persistence: .forSession)
            let space = URLProtectionSpace(
                host: "127.0.0.1", port: server.port, protocol: NSURLProtectionSpaceHTTPS, realm: nil,
                authenticationMethod: NSURLAuthenticationMethodClientCertificate)
            storage.setDefaultCredential(stored, for: space)
            #expect(storage.credentials(for: space)?[""] === stored)
            let delegate = ClientCertificateDelegate(.defaultHandling)
            let session = setup.session(delegate: delegate, storage: storage)
            #expect(await session.runDataTask(server.url("/c")).error == nil)
            #expect(server.requests.last?.clientCertificateDER == client.leafDER)
            #expect(delegate.clientCertificateChallenges.first?.proposedCredential === stored)
            session.invalidateAndCancel()
        }
    }

    @Test func withoutADelegateTheStoragesDefaultIdentityIsPresented() async throws {
        let setup = try Setup()
        let client = try setup.clientCA.clientIdentity()
        try await withServer(.https, tlsIdentity: setup.serverIdentity) { server in
            server.route("/c", response: .ok("plain"))
            let storage = URLCredentialStorage()
            let session = setup.session(delegate: nil, storage: storage)
            // Nothing stored yet: the server refuses the connection.
            #expect(await session.runDataTask(server.url("/c")).urlError?.code == .clientCertificateRequired)
            let space = URLProtectionSpace(
                host: "127.0.0.1", port: server.port, protocol: NSURLProtectionSpaceHTTPS, realm: nil,
                authenticationMethod: NSURLAuthenticationMethodClientCertificate)
            storage.setDefaultCredential(
                URLCredential(identity: client.identity, certificates: nil, persistence: .permanent), for: space)
            let outcome = await session.runDataTask(server.url("/c"))
            #expect(outcome.error == nil)
            #expect(outcome.data == Data("plain".utf8))
            #expect(server.requests.last?.clientCertificateDER == client.leafDER)
            session.invalidateAndCancel()
        }
    }

    @Test func aPKCS12ArchiveImportsAsOnDarwinAndAuthenticates() async throws {
        // The usual Darwin import code, unchanged.
        var items: CFArray?
        let options = [kSecImportExportPassphrase as String: PKCS12Fixture.passphrase] as CFDictionary
        let status = SecPKCS12Import(PKCS12Fixture.archive as CFData, options, &items)
        #expect(status == errSecSuccess)
        let item = try #require((items as? [[String: Any]])?.first)
        let identity = try #require(item[kSecImportItemIdentity as String] as! SecIdentity?)
        let chain = try #require(item[kSecImportItemCertChain as String] as? [SecCertificate])
        #expect(chain.map(SecCertificateCopyData) == [PKCS12Fixture.leafDER, PKCS12Fixture.authorityDER])
        #expect(item[kSecImportItemLabel as String] as? String == "fixture-client")
        #expect(item[kSecImportItemTrust as String] is SecTrust)
        var certificate: SecCertificate?
        #expect(SecIdentityCopyCertificate(identity, &certificate) == errSecSuccess)
        #expect(certificate.map(SecCertificateCopyData) == PKCS12Fixture.leafDER)

        let serverCA = try TestCertificateAuthority(commonName: "Server CA")
        var serverIdentity = try serverCA.serverIdentity()
        serverIdentity.requiredClientCertificateAuthoritiesDER = [Array(PKCS12Fixture.authorityDER)]
        try await withServer(.https, tlsIdentity: serverIdentity) { server in
            server.route("/p12", response: .ok("archive"))
            let session = makeSession(delegate: ClientCertificateDelegate(.present(identity))) {
                $0.courierAdditionalTrustedCertificates = [serverCA.certificate.derData]
            }
            let outcome = await session.runDataTask(server.url("/p12"))
            #expect(outcome.error == nil)
            #expect(server.requests.last?.clientCertificateDER == Array(PKCS12Fixture.leafDER))
            session.invalidateAndCancel()
        }
    }

    @Test func badArchivesAndPassphrasesGiveDarwinsStatusCodes() {
        var items: CFArray?
        let wrong = [kSecImportExportPassphrase as String: "not it"] as CFDictionary
        #expect(SecPKCS12Import(PKCS12Fixture.archive as CFData, wrong, &items) == errSecAuthFailed)
        #expect(items == nil)
        let right = [kSecImportExportPassphrase as String: PKCS12Fixture.passphrase] as CFDictionary
        #expect(SecPKCS12Import(Data("not an archive".utf8), right, &items) == errSecDecode)
        #expect(SecPKCS12Import(PKCS12Fixture.archive.prefix(200), right, &items) == errSecDecode)
        #expect(SecPKCS12Import(Data(), right, &items) == errSecDecode)
        let notAString = [kSecImportExportPassphrase as String: 42] as CFDictionary
        #expect(SecPKCS12Import(PKCS12Fixture.archive, notAString, &items) == errSecParam)
        #expect(items == nil)
    }

    @Test func pemTextThatIsNotAnIdentityThrows() throws {
        let authority = try TestCertificateAuthority()
        let (leaf, _) = try authority.leaf(usage: .clientAuth)
        let pem = try leaf.serializeAsPEM().pemString
        #expect(throws: (any Error).self) {
            try SecIdentity.courierIdentity(certificateChainPEM: pem, privateKeyPEM: "-----BEGIN PRIVATE KEY-----\n")
        }
        #expect(throws: (any Error).self) {
            try SecIdentity.courierIdentity(certificateChainPEM: "", privateKeyPEM: authority.key.pemRepresentation)
        }
    }

    @Test func identityCredentialsArchiveAsAMarkerOnlyAndCompareByIdentity() throws {
        let client = try TestCertificateAuthority().clientIdentity()
        let credential = URLCredential(identity: client.identity, certificates: nil, persistence: .forSession)
        #expect(credential.identity === client.identity && credential.user == nil && credential.certificates.isEmpty)
        #expect(
            credential.isEqual(URLCredential(identity: client.identity, certificates: [], persistence: .forSession)))
        let other = try TestCertificateAuthority().clientIdentity()
        #expect(
            !credential.isEqual(URLCredential(identity: other.identity, certificates: nil, persistence: .forSession)))
        let archive = try NSKeyedArchiver.archivedData(withRootObject: credential, requiringSecureCoding: true)
        #expect((try? NSKeyedUnarchiver.unarchivedObject(ofClass: URLCredential.self, from: archive)) == nil)
    }
}
