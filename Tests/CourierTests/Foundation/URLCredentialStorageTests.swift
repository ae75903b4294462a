import Courier
import Foundation
import Testing

@Suite("URLCredentialStorage")
struct URLCredentialStorageTests {
    private let space = URLProtectionSpace(
        host: "example.com", port: 443, protocol: NSURLProtectionSpaceHTTPS, realm: "api",
        authenticationMethod: NSURLAuthenticationMethodHTTPBasic)

    @Test("Store, look up, default and remove")
    func lifecycle() {
        let storage = URLCredentialStorage()
        let alice = URLCredential(user: "alice", password: "a", persistence: .forSession)
        let bob = URLCredential(user: "bob", password: "b", persistence: .permanent)
        storage.set(alice, for: space)
        storage.setDefaultCredential(bob, for: space)
        #expect(storage.credentials(for: space)?.keys.sorted() == ["alice", "bob"])
        #expect(storage.defaultCredential(for: space) == bob)
        #expect(storage.allCredentials.count == 1)

        storage.remove(bob, for: space)
        #expect(storage.defaultCredential(for: space) == nil)
        storage.remove(alice, for: space, options: nil)
        #expect(storage.credentials(for: space) == nil)
        #expect(storage.allCredentials.isEmpty)
    }

    @Test("Credentials with no persistence are not stored")
    func nonePersistence() {
        let storage = URLCredentialStorage()
        let credential = URLCredential(user: "u", password: "p", persistence: .none)
        storage.set(credential, for: space)
        storage.setDefaultCredential(credential, for: space)
        #expect(storage.credentials(for: space) == nil)
        #expect(storage.defaultCredential(for: space) == nil)
    }

    @Test("Protection spaces compare by value, ignoring host case")
    func protectionSpaceEquality() {
        let same = URLProtectionSpace(
            host: "EXAMPLE.com", port: 443, protocol: "https", realm: "api",
            authenticationMethod: NSURLAuthenticationMethodHTTPBasic)
        let otherRealm = URLProtectionSpace(
            host: "example.com", port: 443, protocol: "https", realm: "web",
            authenticationMethod: NSURLAuthenticationMethodHTTPBasic)
        #expect(space == same)
        #expect(space.hash == same.hash)
        #expect(space != otherRealm)
        let storage = URLCredentialStorage()
        storage.set(URLCredential(user: "u", password: "p", persistence: .forSession), for: space)
        #expect(storage.credentials(for: same)?["u"]?.password == "p")
        #expect(storage.credentials(for: otherRealm) == nil)
    }

    @Test("Protection space properties")
    func protectionSpaceProperties() {
        let plain = URLProtectionSpace(host: "h", port: 80, protocol: "http", realm: nil, authenticationMethod: nil)
        #expect(plain.authenticationMethod == NSURLAuthenticationMethodDefault)
        #expect(!plain.isProxy())
        #expect(!plain.receivesCredentialSecurely)
        #expect(space.receivesCredentialSecurely)
        #expect(space.serverTrust == nil)
        let proxy = URLProtectionSpace(
            proxyHost: "proxy", port: 3128, type: NSURLProtectionSpaceHTTPProxy, realm: nil,
            authenticationMethod: NSURLAuthenticationMethodNTLM)
        #expect(proxy.isProxy())
        #expect(proxy.proxyType == "http")
        #expect(proxy.protocol == nil)
        #expect(proxy.receivesCredentialSecurely)
    }

    @Test(
        "Constants have Apple's values",
        arguments: [
            (NSURLProtectionSpaceHTTP, "http"), (NSURLProtectionSpaceHTTPS, "https"), (NSURLProtectionSpaceFTP, "ftp"),
            (NSURLProtectionSpaceHTTPProxy, "http"), (NSURLProtectionSpaceHTTPSProxy, "https"),
            (NSURLProtectionSpaceFTPProxy, "ftp"), (NSURLProtectionSpaceSOCKSProxy, "SOCKS"),
            (NSURLAuthenticationMethodDefault, "NSURLAuthenticationMethodDefault"),
            (NSURLAuthenticationMethodHTTPBasic, "NSURLAuthenticationMethodHTTPBasic"),
            (NSURLAuthenticationMethodHTTPDigest, "NSURLAuthenticationMethodHTTPDigest"),
            (NSURLAuthenticationMethodHTMLForm, "NSURLAuthenticationMethodHTMLForm"),
            (NSURLAuthenticationMethodNTLM, "NSURLAuthenticationMethodNTLM"),
            (NSURLAuthenticationMethodNegotiate, "NSURLAuthenticationMethodNegotiate"),
            (NSURLAuthenticationMethodClientCertificate, "NSURLAuthenticationMethodClientCertificate"),
            (NSURLAuthenticationMethodServerTrust, "NSURLAuthenticationMethodServerTrust"),
        ])
    func constants(value: String, expected: String) {
        #expect(value == expected)
    }

    @Test("Credentials")
    func credentials() {
        let credential = URLCredential(user: "u", password: "p", persistence: .permanent)
        #expect(credential.user == "u")
        #expect(credential.password == "p")
        #expect(credential.hasPassword)
        #expect(credential.persistence == .permanent)
        #expect(credential.certificates.isEmpty)
        #expect(credential == URLCredential(user: "u", password: "p", persistence: .permanent))
        #expect(credential != URLCredential(user: "u", password: "q", persistence: .permanent))
        #expect(URLCredentialStorage.shared === URLCredentialStorage.shared)
    }
}
