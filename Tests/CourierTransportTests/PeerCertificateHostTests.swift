import Testing

@testable import CourierTransport

/// ``PeerCertificateHost``: the leaf must name the host asked for. An iPAddress entry proves an IP literal host only,
/// never a DNS name that happens to resolve to (or be tunnelled through) that address.
@Suite("The leaf names the host")
struct PeerCertificateHostTests {
    private static let loopback: [UInt8] = [127, 0, 0, 1]
    private static let loopback6: [UInt8] = Array(repeating: 0, count: 15) + [1]

    static let cases: [(String, [String], [[UInt8]], Bool)] = [
        ("localhost", ["localhost"], [loopback], true),
        ("LOCALHOST", ["localhost"], [], true),
        ("a.example.com", ["*.example.com"], [], true),
        // The address entry is the socket's peer, not the name: NIOSSL's check alone accepted these.
        ("localhost", ["elsewhere.test"], [loopback], false),
        ("bank.example", [], [loopback], false),
        ("127.0.0.1", ["elsewhere.test"], [loopback], true),
        ("127.0.0.1", ["127.0.0.1"], [], false),
        ("127.0.0.2", [], [loopback], false),
        ("::1", [], [loopback6], true),
        ("::1%1", [], [loopback6], true),
        // No entries at all: left to NIOSSL's common-name check.
        ("localhost", [], [], true),
    ]

    @Test(arguments: cases)
    func theLeafMustNameTheHost(host: String, dnsNames: [String], ipAddresses: [[UInt8]], names: Bool) {
        #expect(PeerCertificateHost.names(host, dnsNames: dnsNames, ipAddresses: ipAddresses) == names)
    }
}
