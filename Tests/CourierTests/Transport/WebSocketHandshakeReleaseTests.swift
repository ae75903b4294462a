import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

@testable import Courier

/// An open WebSocket task keeps only its connection: the engine that ran its handshake is let go once the server
/// switched protocols, not kept (with everything it holds) until the connection closes.
@Suite("A WebSocket task lets go of its handshake")
struct WebSocketHandshakeReleaseTests {
    @Test func anOpenWebSocketTaskReleasesItsHandshakeEngine() async throws {
        try await withServer { server in
            server.webSocket("/echo", endpoint: .echo)
            let session = makeSession()
            defer { session.invalidateAndCancel() }
            let url = try WebSocketTaskTests.webSocketURL(server, "/echo")
            // The engine is made by `resume()` and let go once the handshake is over: on a loaded machine the
            // handshake can end before this thread looks. Another task is tried then (the earlier ones cancelled),
            // so that the release below is seen happening, not assumed.
            var task = session.webSocketTask(with: url)
            task.resume()
            weak var engine = task.mutable.withLock { $0.engine }
            for _ in 0..<4 where engine == nil {
                task.cancel(with: .normalClosure, reason: nil)
                task = session.webSocketTask(with: url)
                task.resume()
                engine = task.mutable.withLock { $0.engine }
            }
            try #require(engine != nil)
            // An echo came back: the connection is open, so the handshake ended.
            try await task.send(.string("hello"))
            guard case .string("hello") = try await task.receive() else {
                Issue.record("no echo")
                return
            }
            // Without the release the task held the engine until the connection closed: this never held.
            try await waitUntil { engine == nil }
            #expect(engine == nil)
            // The task is still open and still answers what the handshake gave it.
            #expect(task.state == .running)
            #expect((task.response as? HTTPURLResponse)?.statusCode == 101)
            try await task.send(.string("again"))
            guard case .string("again") = try await task.receive() else {
                Issue.record("no echo after the release")
                return
            }
            task.cancel(with: .normalClosure, reason: nil)
        }
    }
}
