import Courier
import Foundation
import Testing

/// Port 0 in a protection space the app makes means the default port of its protocol or proxy type, as Apple
/// documents for both initializers.
@Suite("URLProtectionSpace default port")
struct ProtectionSpaceDefaultPortTests {
    @Test(
        "Port 0 is the protocol's default port",
        arguments: [(NSURLProtectionSpaceHTTP, 80), (NSURLProtectionSpaceHTTPS, 443), (NSURLProtectionSpaceFTP, 21)])
    func serverSpace(scheme: String, port: Int) {
        let unspecified = URLProtectionSpace(
            host: "example.com", port: 0, protocol: scheme, realm: "api",
            authenticationMethod: NSURLAuthenticationMethodHTTPBasic)
        let explicit = URLProtectionSpace(
            host: "example.com", port: port, protocol: scheme, realm: "api",
            authenticationMethod: NSURLAuthenticationMethodHTTPBasic)
        #expect(unspecified.port == port)
        #expect(unspecified.isEqual(explicit))
        #expect(unspecified.hash == explicit.hash)
    }

    @Test(
        "Port 0 is the proxy type's default port",
        arguments: [
            (NSURLProtectionSpaceHTTPProxy, 80), (NSURLProtectionSpaceHTTPSProxy, 443),
            (NSURLProtectionSpaceSOCKSProxy, 1080),
        ])
    func proxySpace(type: String, port: Int) {
        let space = URLProtectionSpace(
            proxyHost: "proxy.example.com", port: 0, type: type, realm: nil, authenticationMethod: nil)
        #expect(space.port == port)
    }

    @Test("A protocol without a default port keeps port 0")
    func unknownProtocol() {
        let space = URLProtectionSpace(
            host: "example.com", port: 0, protocol: "gopher", realm: nil, authenticationMethod: nil)
        #expect(space.port == 0)
        #expect(URLProtectionSpace(host: "h", port: 0, protocol: nil, realm: nil, authenticationMethod: nil).port == 0)
    }

    /// The session looks the storage up with the space of the 401: the URL's port, or the scheme's default (443
    /// for `https://api.example.com/`).
    @Test("A credential stored for port 0 is the default credential of the challenge's space")
    func storedCredentialIsFound() {
        let storage = URLCredentialStorage()
        let credential = URLCredential(user: "alice", password: "secret", persistence: .forSession)
        storage.setDefaultCredential(
            credential,
            for: URLProtectionSpace(
                host: "api.example.com", port: 0, protocol: NSURLProtectionSpaceHTTPS, realm: "API",
                authenticationMethod: NSURLAuthenticationMethodHTTPBasic))
        let challenged = URLProtectionSpace(
            host: "api.example.com", port: 443, protocol: "https", realm: "API",
            authenticationMethod: NSURLAuthenticationMethodHTTPBasic)
        #expect(storage.defaultCredential(for: challenged) == credential)
        #expect(storage.credentials(for: challenged)?["alice"] == credential)
    }
}
