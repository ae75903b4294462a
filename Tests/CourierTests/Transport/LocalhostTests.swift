import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `localhost` and names under it reach the loopback addresses whatever the system's resolver says, as with curl
/// (and so FoundationNetworking): this machine's `/etc/hosts` gives `localhost` only `127.0.0.1`, and before, a
/// server listening on `::1` only could not be reached by that name (connection refused).
@Suite("localhost")
struct LocalhostTests {
    /// Holds `127.0.0.1:port` bound but not listening, so that a connection there is refused, as on a machine where
    /// nothing else uses the port: tests run in parallel, and another test's IPv4 server could have the same port
    /// number as this test's IPv6 one. `nil` when the port is taken on IPv4.
    private func refusingIPv4Port(_ port: Int) -> Int32? {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else {
            close(descriptor)
            return nil
        }
        return descriptor
    }

    /// Runs `body` with a server on `::1` only whose port refuses connections on `127.0.0.1`.
    private func withIPv6OnlyServer(_ body: (MockServer) async throws -> Void) async throws {
        for _ in 0..<10 {
            let ran = try await withServer(host: "::1") { server in
                guard let held = refusingIPv4Port(server.port) else { return false }
                defer { close(held) }
                server.route("/six", response: .ok("v6"))
                try await body(server)
                return true
            }
            if ran { return }
        }
        Issue.record("no port free on both IPv4 and IPv6 loopback in 10 tries")
    }

    @Test func aDataTaskReachesAServerOnIPv6LoopbackOnly() async throws {
        try await withIPv6OnlyServer { server in
            let session = makeSession()
            defer { session.finishTasksAndInvalidate() }
            let url = try #require(URL(string: "http://localhost:\(server.port)/six"))
            let (data, response) = try await session.data(from: url)
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            #expect(String(decoding: data, as: UTF8.self) == "v6")
        }
    }

    @Test func aStreamTaskReachesAServerOnIPv6LoopbackOnly() async throws {
        try await withIPv6OnlyServer { server in
            let session = makeSession()
            defer { session.finishTasksAndInvalidate() }
            let queue = session.delegateQueue
            let task = session.streamTask(withHostName: "LocalHost", port: server.port)
            task.resume()
            let request = "GET /six HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
            #expect(await task.write(request, queue: queue).error == nil)
            var received = ""
            while true {
                let read = await task.read(min: 1, max: 4096, queue: queue)
                received += read.text ?? ""
                if read.atEOF || read.error != nil { break }
            }
            #expect(received.hasPrefix("HTTP/1.1 200"))
            #expect(received.hasSuffix("v6"))
            task.cancel()
        }
    }

    /// A name under `localhost` (RFC 6761) needs no entry in `/etc/hosts` and never goes to DNS.
    @Test func aNameUnderLocalhostIsTheLoopbackHost() async throws {
        try await withServer { server in
            server.route("/sub", response: .ok("sub"))
            let session = makeSession()
            defer { session.finishTasksAndInvalidate() }
            let url = try #require(URL(string: "http://app.localhost:\(server.port)/sub"))
            let (data, _) = try await session.data(from: url)
            #expect(String(decoding: data, as: UTF8.self) == "sub")
            #expect(server.requests(path: "/sub").first?.header("Host") == "app.localhost:\(server.port)")
        }
    }
}
