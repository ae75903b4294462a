import CourierHTTP
import NIOCore
import NIOSSL

/// Whether a server's leaf certificate names the host a connection is for, as Darwin's SSL policy asks: a DNS host
/// a dNSName entry covers (``CertificateHostName``), an IP literal an iPAddress entry with its bytes.
///
/// NIOSSL's own check (`.fullVerification`) is not enough on its own: it also accepts a leaf whose iPAddress entry
/// is the address the socket is connected to, whatever the host. That address is the proxy's when the connection is
/// tunnelled, and whatever a DNS answer said otherwise, so a certificate for an IP address someone controls would
/// pass for every name. Used for connections NIOSSL verifies (sessions without a delegate); a
/// ``ServerTrustEvaluator`` checks the host itself.
enum PeerCertificateHost {
    /// Whether the leaf the TLS handler in `pipeline` received names `host`. Fails closed: without the handler or
    /// its peer certificate there is nothing that names the host. Call on the pipeline's event loop.
    static func handshakeLeaf(in pipeline: ChannelPipeline, names host: String) -> Bool {
        guard let leaf = try? pipeline.syncOperations.handler(type: NIOSSLClientHandler.self).peerCertificate else {
            return false
        }
        return Self.leaf(leaf, names: host)
    }

    /// Whether `leaf` names `host` (an `Endpoint`'s host: no brackets).
    static func leaf(_ leaf: NIOSSLCertificate, names host: String) -> Bool {
        var dnsNames: [String] = []
        var ipAddresses: [[UInt8]] = []
        for name in leaf._subjectAlternativeNames() {
            let bytes = name.contents.withUnsafeBufferPointer { Array($0) }
            if name.nameType == .dnsName {
                dnsNames.append(String(decoding: bytes, as: UTF8.self))
            } else if name.nameType == .ipAddress {
                ipAddresses.append(bytes)
            }
        }
        return names(host, dnsNames: dnsNames, ipAddresses: ipAddresses)
    }

    /// The rule on the entries themselves. A leaf with neither kind of entry is left to NIOSSL, which then checks
    /// its common name against the DNS host (never against an address).
    static func names(_ host: String, dnsNames: [String], ipAddresses: [[UInt8]]) -> Bool {
        if dnsNames.isEmpty && ipAddresses.isEmpty { return true }
        if let address = addressBytes(host) { return ipAddresses.contains(address) }
        return dnsNames.contains { CertificateHostName.matches(pattern: $0, host: host) }
    }

    /// The bytes of an IPv4 or IPv6 literal (an IPv6 zone, which names a local interface, left out), or `nil` for a
    /// name.
    static func addressBytes(_ host: String) -> [UInt8]? {
        switch try? SocketAddress(ipAddress: RequestHost.withoutZone(host), port: 0) {
        case .v4(let v4)?:
            return withUnsafeBytes(of: v4.address.sin_addr) { Array($0) }
        case .v6(let v6)?:
            return withUnsafeBytes(of: v6.address.sin6_addr) { Array($0) }
        default:
            return nil
        }
    }
}
