import Courier
import Foundation
import Testing

/// `receivesCredentialSecurely`: whether the password is protected on its way, by TLS to the server or by the
/// authentication method.
@Suite("URLProtectionSpace.receivesCredentialSecurely")
struct ProtectionSpaceSecurityTests {
    @Test(
        "A server space is secure over HTTPS or with a method that hides the password",
        arguments: [
            (NSURLProtectionSpaceHTTPS, NSURLAuthenticationMethodHTTPBasic, true),
            ("HTTPS", NSURLAuthenticationMethodHTTPBasic, true),
            (NSURLProtectionSpaceHTTP, NSURLAuthenticationMethodHTTPBasic, false),
            (NSURLProtectionSpaceHTTP, NSURLAuthenticationMethodHTTPDigest, false),
            (NSURLProtectionSpaceHTTP, NSURLAuthenticationMethodNTLM, true),
        ])
    func serverSpace(scheme: String, method: String, secure: Bool) {
        let space = URLProtectionSpace(
            host: "example.com", port: 443, protocol: scheme, realm: "api", authenticationMethod: method)
        #expect(space.receivesCredentialSecurely == secure)
    }

    /// The session's 407 for an `https` request through an HTTP proxy has the proxy type
    /// `NSURLProtectionSpaceHTTPSProxy`, yet its Basic answer goes to the proxy in the clear, in the `CONNECT`.
    @Test(
        "A proxy space is secure by its method only, whatever its proxy type",
        arguments: [
            (NSURLProtectionSpaceHTTPSProxy, NSURLAuthenticationMethodHTTPBasic, false),
            (NSURLProtectionSpaceHTTPSProxy, NSURLAuthenticationMethodDefault, false),
            (NSURLProtectionSpaceHTTPProxy, NSURLAuthenticationMethodHTTPBasic, false),
            (NSURLProtectionSpaceHTTPSProxy, NSURLAuthenticationMethodNegotiate, true),
            (NSURLProtectionSpaceHTTPProxy, NSURLAuthenticationMethodNTLM, true),
        ])
    func proxySpace(type: String, method: String, secure: Bool) {
        let space = URLProtectionSpace(
            proxyHost: "proxy.example.com", port: 3128, type: type, realm: nil, authenticationMethod: method)
        #expect(space.receivesCredentialSecurely == secure)
    }
}
