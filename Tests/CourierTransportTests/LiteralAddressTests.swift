import NIOCore
import Testing

@testable import CourierTransport

/// ``ConnectionFactory/literalAddress(_:port:)``: an IP literal is connected to directly, without the resolver's
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
        let resolved = try #require(ConnectionFactory.literalAddress(host, port: 8443))
        #expect(resolved.ipAddress == address)
        #expect(resolved.port == 8443)
    }

    /// Names, scoped addresses and near-literals are left to the resolver.
    @Test(arguments: [
        "localhost", "example.test", "cafe", "dead.beef", "fe80::1%eth0", "1.2.3", "256.1.1.1", "", ":::",
    ])
    func anythingElseGoesToTheResolver(host: String) {
        #expect(ConnectionFactory.literalAddress(host, port: 80) == nil)
    }
}
