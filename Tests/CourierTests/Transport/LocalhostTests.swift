import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

/// `localhost` and names under it reach the loopback addresses whatever the system's resolver says, as with curl
/// (and so FoundationNetworking): this machine's `/etc/hosts` gives `localhost` only `127.0.0.1`, and before, a
/// server listening on `::1` only could not be reached by that name (connection refused).
@Suite("localhost")
struct LocalhostTests {
    /// Runs `body` with a server on `::1` only whose port refuses connections on `127.0.0.1`, as on a machine where
    /// nothing else uses it: tests run in parallel, and another test's IPv4 server could have the same port number.
    private func withIPv6OnlyServer(_ body: (MockServer) async throws -> Void) async throws {
        for _ in 0..<10 {
            let ran = try await withServer(host: "::1") { server in
                guard let refusing = try? RefusingPort(port: server.port) else { return false }
                defer { withExtendedLifetime(refusing) {} }
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
