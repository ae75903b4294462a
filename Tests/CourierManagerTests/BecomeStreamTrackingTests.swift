import Courier
import CourierMockServer
import Foundation
import Testing

@testable import CourierManager

/// Polls `condition` until it holds, or fails after `timeout`.
private func waitUntil(timeout: Duration = .seconds(30), _ condition: () async -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while !(await condition()) {
        guard ContinuousClock.now < deadline else {
            Issue.record("the condition did not hold within \(timeout)")
            return
        }
        try await Task.sleep(for: .milliseconds(10))
    }
}

@Suite("SessionManager: a data task that becomes a stream task")
struct BecomeStreamTrackingTests {
    /// A data task a hook answered `.becomeStream` for ends without a completion: the manager lets its per-task
    /// delegate go when the stream task takes over. Before, nothing removed it, and the manager kept every such
    /// task's completion handler (and all it captured) for its whole life.
    @Test func aDataTaskThatBecomesAStreamTaskIsNoLongerTracked() async throws {
        let server = MockTCPServer(
            mode: .script([
                .receive(atLeast: 1),
                .send("HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo/1\r\nConnection: Upgrade\r\n\r\n"),
                // Holds the connection until the client ends it.
                .receive(atLeast: 1 << 30),
            ]))
        try await server.start()
        defer { Task { await server.shutdown() } }
        let configuration = URLSessionConfiguration.ephemeral
        configuration.connectionProxyDictionary = [:]
        let manager = SessionManager(sessionConfiguration: configuration)
        defer { manager.invalidateSessionCancelingTasks(true, resetSession: false) }
        var hooks = manager.hooks
        hooks.dataTaskDidReceiveResponse = { _, _, _ in .becomeStream }
        manager.hooks = hooks

        var request = URLRequest(url: try #require(URL(string: "http://127.0.0.1:\(server.port)/switch")))
        request.setValue("echo/1", forHTTPHeaderField: "Upgrade")
        request.setValue("Upgrade", forHTTPHeaderField: "Connection")
        let task = manager.dataTask(with: request) { _, _, _ in }
        #expect(manager.trackedTaskCount == 1)
        task.resume()
        // The stream task took the data task's place in the session.
        try await waitUntil { await manager.session.allTasks.contains { $0 is URLSessionStreamTask } }
        try await waitUntil { manager.trackedTaskCount == 0 }
        #expect(manager.trackedTaskCount == 0)
    }
}
