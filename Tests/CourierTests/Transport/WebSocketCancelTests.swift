import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

/// `cancel()` and `cancel(with:reason:)` on a WebSocket task whose connection is not open yet — right after
/// `resume()`, while the server holds back its `101`, and as the connection opens: the task always reaches `completed`
/// with `URLError(.cancelled)` at once, never waiting for the server (which here would hold it 30 s).
@Suite("WebSocket task cancel before and during the open")
struct WebSocketCancelTests {
    /// A task whose handshake the server never answers: `cancel()` right after `resume()`, or once the request is out,
    /// ends it as cancelled, and a receive waiting for the connection fails the same way.
    @Test(arguments: [false, true])
    func cancellingWhileTheHandshakeIsPendingCompletesCancelled(waitForTheRequest: Bool) async throws {
        try await withTCPServer(.silent) { server in
            let recorder = WebSocketRecorder()
            let session = makeSession(delegate: recorder)
            defer { session.invalidateAndCancel() }
            let task = session.webSocketTask(with: try #require(URL(string: "ws://127.0.0.1:\(server.port)/ws")))
            // A receive made before the connection opens waits for it, and fails as the task does.
            let received = Task { () -> URLError.Code? in
                do {
                    _ = try await task.receive()
                    return nil
                } catch {
                    return (error as? URLError)?.code
                }
            }
            task.resume()
            if waitForTheRequest { try await waitUntil { server.connectionCount == 1 } }
            let start = ContinuousClock.now
            task.cancel()
            #expect(task.state == .canceling || task.state == .completed)
            try await recorder.completion()
            // At once: a cancel that waited would end at the request timeout (60 s). The bound leaves room for a
            // 2-core machine flooded by the whole suite starting together, where this took 11 s.
            #expect(ContinuousClock.now - start < .seconds(20))
            #expect(recorder.events == [.completed(.cancelled)])
            #expect(task.state == .completed)
            #expect((task.error as? URLError)?.code == .cancelled)
            let receiveError = await received.value
            #expect(receiveError == .cancelled)
        }
    }

    /// `cancel(with:reason:)` before the connection opened cancels the handshake, as its documentation says. No close
    /// frame went out and no close happened: `closeCode` stays `.invalid` and `closeReason` `nil`, as on Darwin
    /// (before the fix they read the code and reason asked for, as though the close had been sent).
    @Test func cancellingWithACodeWhileTheHandshakeIsPendingCompletesCancelled() async throws {
        try await withTCPServer(.silent) { server in
            let recorder = WebSocketRecorder()
            let session = makeSession(delegate: recorder)
            defer { session.invalidateAndCancel() }
            let task = session.webSocketTask(with: try #require(URL(string: "ws://127.0.0.1:\(server.port)/ws")))
            task.resume()
            try await waitUntil { server.connectionCount == 1 }
            task.cancel(with: .goingAway, reason: Data("bye".utf8))
            #expect(task.closeCode == .invalid)
            #expect(task.closeReason == nil)
            try await recorder.completion()
            #expect(recorder.events == [.completed(.cancelled)])
            #expect(task.state == .completed)
            #expect(task.closeCode == .invalid)
            #expect(task.closeReason == nil)
        }
    }

    /// The race of a cancel with the handshake's end opening the connection. Each task is cancelled a little later
    /// than the one before, from right after `resume()` to after the `101` came, so that some cancels land while the
    /// task takes the connection over. Whichever way each race goes, the task completes cancelled (after opening or
    /// not) within seconds, while the server would keep the connection 30 s. Before the fix a cancel that found no
    /// open connection, then moved the task to `canceling` after the open had looked at the task's state, left the
    /// connection open and the task `canceling` until the server closed. The window is narrow: this cannot fail every
    /// run without the fix, but each run tries it many times, at every step of the open.
    @Test func cancellingAsTheConnectionOpensAlwaysCompletesCancelled() async throws {
        try await withServer { server in
            server.webSocket("/ws", endpoint: .script(.wait(.seconds(30))))
            let session = makeSession()
            defer { session.invalidateAndCancel() }
            let url = try WebSocketTaskTests.webSocketURL(server, "/ws")
            for attempt in 0..<80 {
                let recorder = WebSocketRecorder()
                let task = session.webSocketTask(with: url)
                task.delegate = recorder
                task.resume()
                // A busy wait: a sleep's granularity is coarser than the steps of the open.
                let cancelAt = ContinuousClock.now + .microseconds(attempt * 50)
                while ContinuousClock.now < cancelAt {}
                task.cancel()
                try await recorder.completion(timeout: .seconds(20))
                let events = recorder.events
                #expect(
                    events == [.completed(.cancelled)] || events == [.opened(nil), .completed(.cancelled)],
                    "attempt \(attempt): \(events)")
                #expect(task.state == .completed)
            }
        }
    }

    /// A delegate that cancels its task as soon as it hears it opened: the app's cancel runs on the delegate queue
    /// while the task is still taking the connection over.
    @Test func cancellingFromDidOpenCompletesCancelled() async throws {
        try await withServer { server in
            server.webSocket("/ws", endpoint: .script(.wait(.seconds(30))))
            let session = makeSession()
            defer { session.invalidateAndCancel() }
            let url = try WebSocketTaskTests.webSocketURL(server, "/ws")
            for attempt in 0..<20 {
                let recorder = CancellingOnOpen()
                let task = session.webSocketTask(with: url)
                task.delegate = recorder
                task.resume()
                try await recorder.completion(timeout: .seconds(20))
                #expect(recorder.events == [.opened(nil), .completed(.cancelled)], "attempt \(attempt)")
                #expect(task.state == .completed)
            }
        }
    }
}

/// Records like ``WebSocketRecorder`` and cancels the task when it opens.
private final class CancellingOnOpen: NSObject, URLSessionWebSocketDelegate, @unchecked Sendable {
    private let recorder = WebSocketRecorder()
    var events: [WebSocketRecorder.Event] { recorder.events }

    func urlSession(
        _ session: URLSession, webSocketTask: URLSessionWebSocketTask, didOpenWithProtocol protocol: String?
    ) {
        recorder.urlSession(session, webSocketTask: webSocketTask, didOpenWithProtocol: `protocol`)
        webSocketTask.cancel()
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        recorder.urlSession(session, task: task, didCompleteWithError: error)
    }

    func completion(timeout: Duration) async throws {
        try await recorder.completion(timeout: timeout)
    }
}
