import NIOCore
import Testing

@testable import CourierTransport

/// ``HostConnector/literalAddress(_:port:)``: an IP literal is connected to directly, without the resolver's
/// thread hop; anything else goes to the resolver.
@Suite("Connecting to an IP literal")
struct LiteralAddressTests {
    @Test(arguments: [
        ("127.0.0.1", "127.0.0.1"),
        ("10.1.2.3", "10.1.2.3"),
        ("::1", "::1"),
        ("2001:DB8::A", "2001:db8::a"),
    ])
    func aLiteralIsItsOwnAddress(host: String, address: String) throws {
        let resolved = try #require(HostConnector.literalAddress(host, port: 8443))
        #expect(resolved.ipAddress == address)
        #expect(resolved.port == 8443)
    }

    /// Names, scoped addresses and near-literals are not literals.
    @Test(arguments: [
        "localhost", "example.test", "cafe", "dead.beef", "fe80::1%eth0", "1.2.3", "256.1.1.1", "", ":::",
    ])
    func anythingElseGoesToTheResolver(host: String) {
        #expect(HostConnector.literalAddress(host, port: 80) == nil)
    }
}

/// ``HostConnector/isLoopbackName(_:)``: `localhost` and the names under it (RFC 6761), which connect to the
/// loopback addresses without the resolver.
@Suite("localhost names")
struct LoopbackNameTests {
    @Test(arguments: ["localhost", "LocalHost", "localhost.", "app.localhost", "a.b.LOCALHOST", "app.localhost."])
    func loopbackNames(host: String) {
        #expect(HostConnector.isLoopbackName(host))
    }

    @Test(arguments: ["notlocalhost", "localhost.com", "localhostx", "local", "", ".", "127.0.0.1", "example.test"])
    func otherNames(host: String) {
        #expect(!HostConnector.isLoopbackName(host))
    }
}
