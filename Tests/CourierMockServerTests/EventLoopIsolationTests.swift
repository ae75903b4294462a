import CourierTestSupport
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

@testable import CourierMockServer

@Suite("Mock servers run on event loops of their own")
struct EventLoopIsolationTests {
    /// A route's handler, like everything else the server does, runs on ``MockServerEventLoops/group``, not on
    /// `MultiThreadedEventLoopGroup.singleton`, where the client under test runs: a server busy on a loop (hashing a
    /// large upload, unmasking a large WebSocket message) then cannot hold back the client's events. Before, the
    /// servers shared the singleton, and in a full test run on 2 cores such work held up other tests' clients for
    /// seconds.
    @Test func aRouteHandlerRunsOnTheServersLoopsNotTheSingletons() async throws {
        let server = MockServer()
        let seen = NIOLockedValueBox<(own: Bool, singleton: Bool)?>(nil)
        server.route("/where") { _ in
            let own = MockServerEventLoops.group.makeIterator().contains { $0.inEventLoop }
            let singleton = MultiThreadedEventLoopGroup.singleton.makeIterator().contains { $0.inEventLoop }
            seen.withLockedValue { $0 = (own, singleton) }
            return .ok("here")
        }
        try await withServer(server) { server in
            try await TestConnection.with(port: server.port) { connection in
                try await connection.sendRequest("GET", "/where")
                #expect(try await connection.readResponse().text == "here")
            }
        }
        let loops = try #require(seen.withLockedValue { $0 })
        #expect(loops.own)
        #expect(!loops.singleton)
    }
}
