import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import NIOConcurrencyHelpers
import Testing

/// A data task's `.becomeStream`: after `101 Switching Protocols` to a request that asked to upgrade, the app takes
/// the connection over as a stream task and speaks the new protocol itself.
@Suite("becomeStream")
struct BecomeStreamTests {
    /// Answers every response with `.becomeStream` and keeps the stream task it gets.
    final class Delegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
        let streamTask = NIOLockedValueBox<URLSessionStreamTask?>(nil)
        let completions = NIOLockedValueBox<[String]>([])
        let disposition: URLSession.ResponseDisposition
        /// How long the delegate takes to answer, in seconds.
        let answerDelay: Double

        init(disposition: URLSession.ResponseDisposition = .becomeStream, answerDelay: Double = 0) {
            self.disposition = disposition
            self.answerDelay = answerDelay
        }

        func urlSession(
            _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
            completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
        ) {
            guard answerDelay > 0 else {
                completionHandler(disposition)
                return
            }
            let disposition = self.disposition
            DispatchQueue.global().asyncAfter(deadline: .now() + answerDelay) { completionHandler(disposition) }
        }

        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didBecome streamTask: URLSessionStreamTask)
        {
            self.streamTask.withLockedValue { $0 = streamTask }
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
            completions.withLockedValue {
                $0.append("\(task.taskIdentifier) \((error as? URLError)?.code.rawValue ?? 0)")
            }
        }
    }

    @Test func after101TheStreamTaskSpeaksTheNewProtocolOnTheSameConnection() async throws {
        let server = MockTCPServer(
            mode: .script([
                .receive(atLeast: 1),
                .send("HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo/1\r\nConnection: Upgrade\r\n\r\nhello"),
                // Long enough for a loaded machine; the test ends the connection itself.
                .wait(.seconds(30)),
            ]))
        try await server.start()
        defer { Task { await server.shutdown() } }
        let delegate = Delegate()
        let session = makeSession(delegate: delegate)
        defer { session.invalidateAndCancel() }
        var request = URLRequest(url: try #require(URL(string: "http://127.0.0.1:\(server.port)/switch")))
        request.setValue("echo/1", forHTTPHeaderField: "Upgrade")
        request.setValue("Upgrade", forHTTPHeaderField: "Connection")
        let dataTask = session.dataTask(with: request)
        dataTask.resume()
        try await waitUntil { delegate.streamTask.withLockedValue { $0 } != nil }
        if delegate.streamTask.withLockedValue({ $0 }) == nil {
            Issue.record(
                "no stream task: data task \(dataTask.state.rawValue) \(String(describing: dataTask.error)) \(String(describing: dataTask.response)) \(delegate.completions.withLockedValue { $0 })"
            )
        }
        let streamTask = try #require(delegate.streamTask.withLockedValue { $0 })
        #expect(streamTask.state == .running)
        // The bytes that came right behind the 101 head are the stream's first.
        let (first, _) = try await streamTask.readData(ofMinLength: 5, maxLength: 5, timeout: 10)
        #expect(first == Data("hello".utf8))
        try await streamTask.write(Data("over the stream".utf8), timeout: 10)
        try await waitUntil {
            String(decoding: server.receivedBytes, as: UTF8.self).hasSuffix("over the stream")
        }
        // The data task ended without a completion of its own.
        #expect(dataTask.state == .completed)
        #expect(!delegate.completions.withLockedValue { $0 }.contains { $0.hasPrefix("\(dataTask.taskIdentifier) ") })
        streamTask.cancel()
    }

    /// The server closes the connection right after its `101` and the app answers `.becomeStream` a moment later:
    /// the stream task cannot take the closed connection over, and its calls fail at once with a lost connection
    /// (before, its pipeline options were refused, nothing told the stream task, and every read waited for its
    /// timeout, and a read without one for ever).
    @Test func aConnectionClosedBeforeTheStreamTaskTakesItOverFailsTheStreamTask() async throws {
        let server = MockTCPServer(
            mode: .script([
                .receive(atLeast: 1),
                .send("HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo/1\r\nConnection: Upgrade\r\n\r\nbye"),
                .close,
            ]))
        try await server.start()
        defer { Task { await server.shutdown() } }
        let delegate = Delegate(answerDelay: 1)
        let session = makeSession(delegate: delegate)
        defer { session.invalidateAndCancel() }
        var request = URLRequest(url: try #require(URL(string: "http://127.0.0.1:\(server.port)/switch")))
        request.setValue("echo/1", forHTTPHeaderField: "Upgrade")
        request.setValue("Upgrade", forHTTPHeaderField: "Connection")
        session.dataTask(with: request).resume()
        try await waitUntil { delegate.streamTask.withLockedValue { $0 } != nil }
        let streamTask = try #require(delegate.streamTask.withLockedValue { $0 })
        let error = await #expect(throws: URLError.self) {
            _ = try await streamTask.readData(ofMinLength: 1, maxLength: 10, timeout: 20)
        }
        #expect(error?.code == .networkConnectionLost)
        try await waitUntil { streamTask.state == .completed }
        #expect((streamTask.error as? URLError)?.code == .networkConnectionLost)
    }

    /// The data task's own delegate (no session delegate at all) answers `.becomeStream`: the stream task's events
    /// must reach that delegate, as `.becomeDownload`'s do, or the app never hears the stream task complete. Before,
    /// the stream task was made without it and its completion went to the session's delegate (here: nobody).
    @Test func theTaskDelegateCarriesOverToTheStreamTask() async throws {
        let server = MockTCPServer(
            mode: .script([
                .receive(atLeast: 1),
                .send("HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo/1\r\nConnection: Upgrade\r\n\r\n"),
                // Long enough for a loaded machine; the test ends the connection itself.
                .wait(.seconds(30)),
            ]))
        try await server.start()
        defer { Task { await server.shutdown() } }
        let delegate = Delegate()
        let session = makeSession()
        defer { session.invalidateAndCancel() }
        var request = URLRequest(url: try #require(URL(string: "http://127.0.0.1:\(server.port)/switch")))
        request.setValue("echo/1", forHTTPHeaderField: "Upgrade")
        request.setValue("Upgrade", forHTTPHeaderField: "Connection")
        let dataTask = session.dataTask(with: request)
        dataTask.delegate = delegate
        dataTask.resume()
        try await waitUntil { delegate.streamTask.withLockedValue { $0 } != nil }
        let streamTask = try #require(delegate.streamTask.withLockedValue { $0 })
        #expect(streamTask.delegate === delegate)
        // The data task let go of the delegate; the stream task holds it now.
        try await waitUntil { dataTask.delegate == nil }
        streamTask.cancel()
        let expected = "\(streamTask.taskIdentifier) \(URLError.Code.cancelled.rawValue)"
        try await waitUntil { delegate.completions.withLockedValue { $0 }.contains(expected) }
        #expect(delegate.completions.withLockedValue { $0 }.contains(expected))
    }

    /// A data task that asked to upgrade and got `101` but did not become a stream task (here it has a completion
    /// handler, so nobody is asked) closes the switched connection when it completes. The pool let go of the
    /// connection at the switch and no handler reads it any more: before, nothing closed it, and each such request
    /// left a socket open for as long as its server kept it.
    @Test func aSwitchedConnectionNobodyTakesOverIsClosedWhenTheTaskCompletes() async throws {
        let server = MockTCPServer(
            mode: .script([
                .receive(atLeast: 1),
                .send("HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo/1\r\nConnection: Upgrade\r\n\r\n"),
                // Longer than the test waits: only the client can end the connection in time.
                .wait(.seconds(60)),
            ]))
        try await server.start()
        defer { Task { await server.shutdown() } }
        let session = makeSession()
        defer { session.invalidateAndCancel() }
        var request = URLRequest(url: try #require(URL(string: "http://127.0.0.1:\(server.port)/switch")))
        request.setValue("echo/1", forHTTPHeaderField: "Upgrade")
        request.setValue("Upgrade", forHTTPHeaderField: "Connection")
        let outcome = await session.runDataTask(request)
        #expect(outcome.http?.statusCode == 101)
        try await waitUntil { server.endOfInputCount == 1 }
        #expect(server.endOfInputCount == 1)
    }

    @Test func becomeStreamWithoutASwitchedConnectionFailsClearly() async throws {
        try await withServer { server in
            server.route("/plain", response: .ok("not switched"))
            let delegate = Delegate()
            let session = makeSession(delegate: delegate)
            defer { session.invalidateAndCancel() }
            let task = session.dataTask(with: server.url("/plain"))
            task.resume()
            try await waitUntil { task.state == .completed }
            #expect((task.error as? URLError)?.code == .unsupportedURL)
            #expect(delegate.streamTask.withLockedValue { $0 } == nil)
        }
    }
}
