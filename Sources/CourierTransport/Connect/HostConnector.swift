import CourierHTTP
import NIOCore
import NIOPosix

/// Connects a bootstrap to a host given by name or address: an IP literal directly, a `localhost` name to the
/// loopback addresses, any other name through the resolver (happy eyeballs).
enum HostConnector {
    /// Connects to `host`. A literal needs no lookup, and the resolver would run `getaddrinfo` on another thread and
    /// hand its answer back to the event loop (a thread hop and a wake-up for every new connection to `127.0.0.1`).
    static func connect(_ bootstrap: ClientBootstrap, host: String, port: Int) -> EventLoopFuture<any Channel> {
        if let address = literalAddress(host, port: port) { return bootstrap.connect(to: address) }
        if isLoopbackName(host) { return connectToLoopback(bootstrap, port: port) }
        return bootstrap.connect(host: host, port: port)
    }

    /// The socket address of `host` when it is an IPv4 or IPv6 literal (as `Endpoint` and `ProxyServer` keep
    /// hosts: without brackets), or `nil` for a name. A scoped address (`fe80::1%eth0`) goes to the resolver, which
    /// knows its interface: `SocketAddress(ipAddress:)` would drop the scope.
    static func literalAddress(_ host: String, port: Int) -> SocketAddress? {
        guard CookieMatching.isIPAddress(host), !host.utf8.contains(UInt8(ascii: "%")) else { return nil }
        return try? SocketAddress(ipAddress: host, port: port)
    }

    /// Whether `host` is `localhost` or a name under it (RFC 6761 §6.3), in any case, with or without the root's
    /// trailing dot.
    ///
    /// Such a name is the loopback host whatever the system's resolver says, as curl (and so FoundationNetworking)
    /// and browsers treat it: a machine whose `/etc/hosts` lists `localhost` for `127.0.0.1` only (containers often
    /// do) must still reach a development server that listens on `::1`, and `app.localhost` needs no entry at all.
    static func isLoopbackName(_ host: String) -> Bool {
        var name = host.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        return name == "localhost" || name.hasSuffix(".localhost")
    }

    /// `127.0.0.1` first (what most local servers listen on, and the only address many `/etc/hosts` give
    /// `localhost`), then `::1` when that fails. A refused loopback connection fails at once, so trying one after
    /// the other costs no waiting. When both fail, the IPv4 attempt's error is the one reported.
    private static func connectToLoopback(_ bootstrap: ClientBootstrap, port: Int) -> EventLoopFuture<any Channel> {
        guard let v4 = try? SocketAddress(ipAddress: "127.0.0.1", port: port),
            let v6 = try? SocketAddress(ipAddress: "::1", port: port)
        else { return bootstrap.connect(host: "localhost", port: port) }
        let second = SecondAttempt(bootstrap: bootstrap)
        return bootstrap.connect(to: v4).flatMapError { v4Error in
            second.bootstrap.connect(to: v6).flatMapErrorThrowing { _ in throw v4Error }
        }
    }

    /// The bootstrap, for the `::1` attempt. `ClientBootstrap` is not `Sendable`, but nothing uses it between the two
    /// attempts: the second starts only once the first has failed, from the first one's event loop.
    private struct SecondAttempt: @unchecked Sendable {
        let bootstrap: ClientBootstrap
    }
}
