import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import NIOConcurrencyHelpers
import Testing

/// Records a WebSocket task's delegate calls in order.
final class WebSocketRecorder: NSObject, URLSessionWebSocketDelegate, @unchecked Sendable {
    enum Event: Equatable {
        case opened(String?)
        case closed(URLSessionWebSocketTask.CloseCode, String?)
        case completed(URLError.Code?)
    }

    private let state = NIOLockedValueBox<[Event]>([])
    private let done = AsyncGate()
    var events: [Event] { state.withLockedValue { $0 } }

    func urlSession(
        _ session: URLSession, webSocketTask: URLSessionWebSocketTask, didOpenWithProtocol protocol: String?
    ) {
        state.withLockedValue { $0.append(.opened(`protocol`)) }
    }

    func urlSession(
        _ session: URLSession, webSocketTask: URLSessionWebSocketTask,
        didCloseWith closeCode: URLSessionWebSocketTask.CloseCode, reason: Data?
    ) {
        state.withLockedValue { $0.append(.closed(closeCode, reason.map { String(decoding: $0, as: UTF8.self) })) }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        state.withLockedValue { $0.append(.completed((error as? URLError)?.code)) }
        done.open()
    }

    /// Waits for the completion (at most `timeout`).
    func completion(timeout: Duration = .seconds(10)) async throws {
        try await waitUntil(timeout: timeout) { events.contains { if case .completed = $0 { true } else { false } } }
    }
}

/// A cookie storage that takes its time to store: the task hears of its handshake's end well after the `101` came.
final class SlowCookieStorage: HTTPCookieStorage, @unchecked Sendable {
    override func setCookies(_ cookies: [HTTPCookie], for url: URL?, mainDocumentURL: URL?) {
        Thread.sleep(forTimeInterval: 1)
        super.setCookies(cookies, for: url, mainDocumentURL: mainDocumentURL)
    }
}

/// WebSocket tasks end to end against `CourierMockServer`'s WebSocket endpoint: the handshake through the session's
/// stages, messages both ways, pings, both close paths, limits, and servers that break the protocol.
@Suite("WebSocket tasks")
struct WebSocketTaskTests {
    /// A `ws` or `wss` URL for `path` on `server`.
    static func webSocketURL(_ server: MockServer, _ path: String) throws -> URL {
        var components = try #require(URLComponents(url: server.url(path), resolvingAgainstBaseURL: false))
        components.scheme = components.scheme == "https" ? "wss" : "ws"
        return try #require(components.url)
    }

    /// Runs `body` with an HTTP/1.1 server serving `endpoint` at `path` and a resumed task to it, whose delegate is a
    /// recorder.
    /// `closeTimeout`: how long the server has to answer the task's close; a minute by default, so that what a test
    /// checks about a close handshake never races the timeout on a machine loaded by the whole suite. `closeGrace`:
    /// how long the server's close waits for a receive once the app has every message; a minute by default, for the
    /// same reason.
    private func withWebSocket(
        _ endpoint: MockWebSocketEndpoint, at path: String, protocols: [String]? = nil,
        closeTimeout: Duration = .seconds(60), closeGrace: Duration = .seconds(60),
        _ body: (URLSessionWebSocketTask, WebSocketRecorder, MockServer) async throws -> Void
    ) async throws {
        try await withServer { server in
            server.webSocket(path, endpoint: endpoint)
            let recorder = WebSocketRecorder()
            let session = makeSession(delegate: recorder)
            defer { session.invalidateAndCancel() }
            let url = try Self.webSocketURL(server, path)
            let task =
                protocols.map { session.webSocketTask(with: url, protocols: $0) } ?? session.webSocketTask(with: url)
            task.closeHandshakeTimeout = closeTimeout
            task.heldCloseGrace = closeGrace
            task.resume()
            try await body(task, recorder, server)
        }
    }

    @Test(arguments: [MockServer.Scheme.http, .https, .http2])
    func messagesEchoBothWaysAndTheClientCloses(scheme: MockServer.Scheme) async throws {
        try await withServer(scheme, tlsIdentity: scheme == .http ? nil : SharedTestTLS.serverIdentity) { server in
            server.webSocket("/echo", endpoint: MockWebSocketEndpoint(subprotocols: ["v2", "v1"]))
            let recorder = WebSocketRecorder()
            let session = makeSession(delegate: recorder)
            defer { session.finishTasksAndInvalidate() }
            let task = session.webSocketTask(with: try Self.webSocketURL(server, "/echo"), protocols: ["v1", "v2"])
            // A receive made before the connection opens waits for it.
            async let first = task.receive()
            task.resume()
            try await task.send(.string("héllo"))
            guard case .string(let text) = try await first else {
                Issue.record("not a text message")
                return
            }
            #expect(text == "héllo")
            try await task.send(.data(Data([0, 1, 2, 255])))
            guard case .data(let data) = try await task.receive() else {
                Issue.record("not a binary message")
                return
            }
            #expect(data == Data([0, 1, 2, 255]))
            try await task.sendPing()
            task.cancel(with: .goingAway, reason: Data("bye".utf8))
            try await recorder.completion()
            #expect(recorder.events == [.opened("v1"), .closed(.goingAway, "bye"), .completed(nil)])
            #expect(task.closeCode == .goingAway)
            #expect(task.closeReason == Data("bye".utf8))
            let received = await server.waitForWebSocketMessages(path: "/echo", count: 4)
            #expect(received.last == .close(code: 1001, reason: "bye"))
            let handshake = try #require(server.requests(path: "/echo").first)
            #expect(handshake.header("Sec-WebSocket-Protocol") == "v1, v2")
            #expect(handshake.protocolName == "http/1.1")
        }
    }

    /// The handshake is a `GET` without a body (RFC 6455 §4.1): a body on the app's request is left out, instead of
    /// failing the task as a `GET` with a body fails.
    @Test func aBodyOnTheRequestIsLeftOutOfTheHandshake() async throws {
        try await withServer { server in
            server.webSocket("/echo", endpoint: .echo)
            let session = makeSession()
            defer { session.invalidateAndCancel() }
            var request = URLRequest(url: try Self.webSocketURL(server, "/echo"))
            request.httpBody = Data("not for a handshake".utf8)
            let task = session.webSocketTask(with: request)
            task.resume()
            try await task.send(.string("hi"))
            guard case .string(let text) = try await task.receive() else {
                Issue.record("not a text message")
                return
            }
            #expect(text == "hi")
            let handshake = try #require(server.requests(path: "/echo").first)
            #expect(handshake.body.isEmpty)
            task.cancel(with: .normalClosure, reason: nil)
        }
    }

    /// `Sec-WebSocket-Protocol` lists one or more subprotocols (RFC 6455 §4.1 item 10, §4.3 `1#token`): with no
    /// protocols to offer, the handshake leaves the field out instead of sending it empty (which servers such as
    /// Node's `ws` answer with 400).
    @Test func offeringNoSubprotocolsSendsNoSubprotocolField() async throws {
        try await withWebSocket(.echo, at: "/echo", protocols: []) { task, recorder, server in
            try await task.send(.string("hello"))
            _ = try await task.receive()
            task.cancel(with: .normalClosure, reason: nil)
            try await recorder.completion()
            #expect(recorder.events == [.opened(nil), .closed(.normalClosure, nil), .completed(nil)])
            let handshake = try #require(server.requests(path: "/echo").first)
            #expect(handshake.header("Sec-WebSocket-Protocol") == nil)
        }
    }

    @Test func theHandshakeCarriesCookiesAndCredentialsAndFollowsARedirect() async throws {
        try await withServer { server in
            server.webSocket("/socket", endpoint: .echo)
            server.route("/old", response: MockResponse(status: 307, headers: [("Location", "/socket")]))
            let session = makeSession()
            defer { session.finishTasksAndInvalidate() }
            let cookie = try #require(
                HTTPCookie(properties: [.name: "id", .value: "42", .domain: "127.0.0.1", .path: "/"]))
            session.configuration.httpCookieStorage?.setCookie(cookie)
            var request = URLRequest(url: try Self.webSocketURL(server, "/old"))
            request.setValue("yes", forHTTPHeaderField: "X-Extra")
            let task = session.webSocketTask(with: request)
            task.resume()
            let reply: URLSessionWebSocketTask.Message
            do {
                try await task.send(.string("ping"))
                reply = try await task.receive()
            } catch {
                Issue.record("\(error) \(server.requests.map { "\($0.path) \($0.connectionID)" })")
                return
            }
            guard case .string("ping") = reply else {
                Issue.record("no echo")
                return
            }
            let handshake = try #require(server.requests(path: "/socket").first)
            // The redirect's answer came on a connection that carried an upgrade request: it is not reused.
            #expect(server.requests(path: "/old").first?.connectionID != handshake.connectionID)
            #expect(handshake.header("Cookie") == "id=42")
            #expect(handshake.header("X-Extra") == "yes")
            #expect(handshake.header("Sec-WebSocket-Version") == "13")
            task.cancel(with: .normalClosure, reason: nil)
        }
    }

    @Test func theServerClosesAndLaterReceivesFail() async throws {
        try await withWebSocket(.script(.send(text: "last words"), .close(code: 4000, reason: "done")), at: "/s") {
            task, recorder, server in
            guard case .string("last words") = try await task.receive() else {
                Issue.record("the message before the close was lost")
                return
            }
            let error = await #expect(throws: POSIXError.self) { try await task.receive() }
            #expect(error?.code == .ENOTCONN)
            try await recorder.completion()
            // 4000 is in the application range: Darwin's CloseCode, an imported C enumeration, holds it; Courier's
            // is `.other(4000)`.
            #expect(recorder.events == [.opened(nil), .closed(.other(4000), "done"), .completed(nil)])
            #expect(task.closeCode == .other(4000) && task.closeCode.rawValue == 4000)
            #expect(task.closeReason == Data("done".utf8))
            await #expect(throws: (any Error).self) { try await task.send(.string("late")) }
        }
    }

    /// The server's close comes in while messages before it wait for the app (read ahead): `didCloseWith` and the
    /// completion come after the app received them — after the receive that reads the close, as on Darwin, where the
    /// close frame is read by the app's receives, in order. Before, they came as the close arrived, ahead of the
    /// messages (Alamofire's upstream test saw `disconnected` before its last messages).
    @Test func aCloseAfterMessagesTheAppHasNotReceivedIsToldAfterThem() async throws {
        let script = MockWebSocketEndpoint.script(
            .send(text: "one"), .send(text: "two"), .close(code: 1000, reason: "done"))
        try await withWebSocket(script, at: "/s") { task, recorder, _ in
            // `closeCode` is set as soon as the close arrives; both messages are then held.
            try await waitUntil(timeout: .seconds(10)) { task.closeCode == .normalClosure }
            guard case .string("one") = try await task.receive() else {
                Issue.record("the first message was lost")
                return
            }
            // The receive's answer went through the delegate queue after anything told before it.
            #expect(recorder.events == [.opened(nil)])
            #expect(task.state == .running)
            guard case .string("two") = try await task.receive() else {
                Issue.record("the second message was lost")
                return
            }
            // The app has the last message in hand: the close waits for the receive that reads it.
            #expect(recorder.events == [.opened(nil)])
            let error = await #expect(throws: POSIXError.self) { try await task.receive() }
            #expect(error?.code == .ENOTCONN)
            try await recorder.completion()
            #expect(recorder.events == [.opened(nil), .closed(.normalClosure, "done"), .completed(nil)])
        }
    }

    /// A receive loop's message followed at once by the server's close: the message went to the waiting receive, and
    /// no receive waits when the close comes in, while the app still handles the message (an async `receive()`
    /// resumes a task that runs later). The close is told once the app asks again, as on Darwin, where that receive
    /// reads the close frame. Before, `didCloseWith` came at once and could overtake the message: Supabase Realtime,
    /// which drops messages handled after it heard the close, lost the server's last message.
    @Test func theServersCloseRightAfterAMessageWaitsForTheNextReceive() async throws {
        let script = MockWebSocketEndpoint.script(.expectMessage, .send(text: "one"), .close(code: 4001, reason: "bye"))
        try await withWebSocket(script, at: "/s") { task, recorder, _ in
            async let first = task.receive()
            try await task.send(.string("go"))
            guard case .string("one") = try await first else {
                Issue.record("the message was lost")
                return
            }
            try await waitUntil(timeout: .seconds(10)) { task.closeCode == .other(4001) }
            try await Task.sleep(for: .milliseconds(100))
            #expect(recorder.events == [.opened(nil)])
            #expect(task.state == .running)
            let error = await #expect(throws: POSIXError.self) { try await task.receive() }
            #expect(error?.code == .ENOTCONN)
            try await recorder.completion()
            #expect(recorder.events == [.opened(nil), .closed(.other(4001), "bye"), .completed(nil)])
        }
    }

    /// An app that received a message but asks for no more (no receive loop) still hears of the server's close,
    /// after the grace a receive loop gets to ask again.
    @Test func theServersCloseIsToldAfterAGraceToAnAppThatStoppedReceiving() async throws {
        let script = MockWebSocketEndpoint.script(.expectMessage, .send(text: "one"), .close(code: 1000, reason: ""))
        try await withWebSocket(script, at: "/s", closeGrace: .milliseconds(200)) { task, recorder, _ in
            async let first = task.receive()
            try await task.send(.string("go"))
            _ = try await first
            try await recorder.completion(timeout: .seconds(20))
            #expect(recorder.events == [.opened(nil), .closed(.normalClosure, nil), .completed(nil)])
        }
    }

    /// The same when the message was read ahead: the receive that takes it, the last before the close, starts the
    /// grace (before, the task waited for a receive that never came).
    @Test func theServersCloseBehindAReadAheadMessageIsToldAfterAGrace() async throws {
        let script = MockWebSocketEndpoint.script(.send(text: "one"), .close(code: 1000, reason: ""))
        try await withWebSocket(script, at: "/s", closeGrace: .milliseconds(200)) { task, recorder, _ in
            try await waitUntil(timeout: .seconds(10)) { task.closeCode == .normalClosure }
            guard case .string("one") = try await task.receive() else {
                Issue.record("the message was lost")
                return
            }
            try await recorder.completion(timeout: .seconds(20))
            #expect(recorder.events == [.opened(nil), .closed(.normalClosure, nil), .completed(nil)])
        }
    }

    /// `cancel(with:reason:)` while the server's close waits for a receive: that close is the one that happened, told
    /// with `didCloseWith` and a completion without an error (not a cancellation).
    @Test func closingWhileTheServersCloseWaitsTellsThatClose() async throws {
        let script = MockWebSocketEndpoint.script(.expectMessage, .send(text: "one"), .close(code: 4002, reason: "x"))
        try await withWebSocket(script, at: "/s") { task, recorder, _ in
            async let first = task.receive()
            try await task.send(.string("go"))
            _ = try await first
            try await waitUntil(timeout: .seconds(10)) { task.closeCode == .other(4002) }
            task.cancel(with: .normalClosure, reason: nil)
            try await recorder.completion()
            #expect(recorder.events == [.opened(nil), .closed(.other(4002), "x"), .completed(nil)])
        }
    }

    /// The code the app closes with is recorded as its named case: `.other(1000)` is `.normalClosure`, which a
    /// `switch` matches.
    @Test func anAppsCloseCodeIsRecordedAsItsNamedCase() async throws {
        try await withWebSocket(.echo, at: "/echo") { task, recorder, _ in
            try await task.sendPing()
            task.cancel(with: .other(1000), reason: nil)
            guard case .normalClosure = task.closeCode else {
                Issue.record("closeCode is \(task.closeCode)")
                return
            }
            try await recorder.completion()
        }
    }

    /// An app that has never received (no receive loop to read the close) hears of the server's close at once.
    @Test func theServersCloseIsToldAtOnceToAnAppThatNeverReceives() async throws {
        try await withWebSocket(.script(.close(code: 1001, reason: "away")), at: "/s") { task, recorder, _ in
            try await recorder.completion()
            #expect(recorder.events == [.opened(nil), .closed(.goingAway, "away"), .completed(nil)])
        }
    }

    /// A `cancel()` while the server's close waits behind messages the app has not received ends the task, cancelled
    /// (the connection is gone: there is nothing else to cancel), and the close is not told.
    @Test func cancellingWhileTheServersCloseWaitsBehindMessagesEndsTheTask() async throws {
        let script = MockWebSocketEndpoint.script(.send(text: "one"), .close(code: 1000, reason: "done"))
        try await withWebSocket(script, at: "/s") { task, recorder, _ in
            try await waitUntil(timeout: .seconds(10)) { task.closeCode == .normalClosure }
            task.cancel()
            try await recorder.completion()
            #expect(recorder.events == [.opened(nil), .completed(.cancelled)])
            #expect(task.state == .completed)
        }
    }

    /// `closeCode` and `closeReason` say how the connection closed: a `cancel(with:reason:)` made after the close
    /// changes neither (it closes nothing), and a second one while the close handshake runs does not replace the code
    /// and reason that went to the server. Before the fix every call overwrote them, also on a completed task.
    @Test func aCloseAskedForAfterTheFirstDoesNotChangeTheCloseCodeAndReason() async throws {
        try await withWebSocket(.script(.close(code: 1001, reason: "server leaving")), at: "/s") { task, recorder, _ in
            try await recorder.completion()
            #expect(recorder.events == [.opened(nil), .closed(.goingAway, "server leaving"), .completed(nil)])
            task.cancel(with: .normalClosure, reason: Data("too late".utf8))
            #expect(task.closeCode == .goingAway)
            #expect(task.closeReason == Data("server leaving".utf8))
            #expect(task.state == .completed)
            #expect(task.error == nil)
        }
        try await withWebSocket(.echo, at: "/echo") { task, recorder, server in
            try await task.send(.string("hello"))
            _ = try await task.receive()
            task.cancel(with: .goingAway, reason: Data("first".utf8))
            task.cancel(with: .normalClosure, reason: Data("second".utf8))
            #expect(task.closeCode == .goingAway)
            #expect(task.closeReason == Data("first".utf8))
            try await recorder.completion()
            #expect(recorder.events == [.opened(nil), .closed(.goingAway, "first"), .completed(nil)])
            #expect(task.closeCode == .goingAway)
            #expect(task.closeReason == Data("first".utf8))
            let received = await server.waitForWebSocketMessages(path: "/echo", count: 2)
            #expect(received.last == .close(code: 1001, reason: "first"))
        }
    }

    /// The server's close crosses the app's `cancel(with:reason:)`: the server's close frame reached the connection
    /// first (it answered it), so the app's close sent nothing, and the server's close is the one that happened.
    /// `closeCode` and `closeReason` then both describe it, as `didCloseWith` does. Before the fix they mixed the two
    /// closes: a server code without a `CloseCode` (4000) kept the app's code next to the server's reason, and a server
    /// close without a reason kept the app's reason next to the server's code.
    @Test(arguments: [(UInt16(4000), "server leaving"), (UInt16(1000), "")])
    func aServerCloseThatCrossesTheAppsCloseGivesItsCodeAndReasonTogether(code: UInt16, reason: String)
        async throws
    {
        // The server closes, records the client's answer without answering it and keeps the connection open: the
        // client's close timeout (1 s here) ends the connection, which leaves the app time to ask for its own close.
        let close = MockWebSocketFrame.bytes(
            opcode: MockWebSocketFrame.Opcode.close,
            payload: MockWebSocketFrame.closePayload(code: code, reason: reason))
        let endpoint = MockWebSocketEndpoint(behaviour: .script([.ignoreClose, .sendRaw(close), .wait(.seconds(30))]))
        try await withWebSocket(endpoint, at: "/ws", closeTimeout: .seconds(1)) { task, recorder, server in
            let answer = await server.waitForWebSocketMessages(path: "/ws", count: 1)
            #expect(answer == [.close(code: code, reason: "")])
            task.cancel(with: .goingAway, reason: Data("app leaving".utf8))
            try await recorder.completion(timeout: .seconds(25))
            let expectedCode = URLSessionWebSocketTask.CloseCode(rawValue: Int(code)) ?? .invalid
            let expectedReason: String? = reason.isEmpty ? nil : reason
            #expect(recorder.events == [.opened(nil), .closed(expectedCode, expectedReason), .completed(nil)])
            #expect(task.closeCode == expectedCode)
            #expect(task.closeReason == expectedReason.map { Data($0.utf8) })
            // The app's close never went out: the client's only close frame is its answer.
            #expect(server.webSocketMessages(path: "/ws") == [.close(code: code, reason: "")])
        }
    }

    /// Once the connection closed cleanly, a send and a ping fail as a receive does: with Darwin's `ENOTCONN`
    /// ("Socket is not connected"), not as a lost connection.
    @Test func sendsAndPingsAfterACleanCloseFailWithNotConnected() async throws {
        try await withWebSocket(.echo, at: "/echo") { task, recorder, server in
            try await task.send(.string("hello"))
            _ = try await task.receive()
            task.cancel(with: .normalClosure, reason: nil)
            try await recorder.completion()
            #expect(recorder.events == [.opened(nil), .closed(.normalClosure, nil), .completed(nil)])
            let receiveError = await #expect(throws: POSIXError.self) { try await task.receive() }
            #expect(receiveError?.code == .ENOTCONN)
            let sendError = await #expect(throws: POSIXError.self) { try await task.send(.string("late")) }
            #expect(sendError?.code == .ENOTCONN)
            let pingError = await #expect(throws: POSIXError.self) { try await task.sendPing() }
            #expect(pingError?.code == .ENOTCONN)
        }
    }

    /// While a close handshake runs — the app's close went out and the server has not answered, or the server's
    /// came in and the client answered it — no data frame may go out (RFC 6455 §5.5.1): a send and a ping fail as
    /// after the close, with Darwin's `ENOTCONN`. Before the fix they failed as a lost connection
    /// (`URLError(.networkConnectionLost)`) until the connection's end came back, and with `ENOTCONN` after.
    @Test(arguments: [false, true])
    func sendsAndPingsDuringTheCloseHandshakeFailWithNotConnected(serverCloses: Bool) async throws {
        // The server leaves the handshake open (the client's close timeout, a minute here, would end it), so the sends
        // below are made while it runs.
        let close = MockWebSocketFrame.bytes(
            opcode: MockWebSocketFrame.Opcode.close, payload: MockWebSocketFrame.closePayload(code: 1000))
        let steps: [MockWebSocketStep] =
            serverCloses ? [.ignoreClose, .sendRaw(close), .wait(.seconds(30))] : [.ignoreClose, .wait(.seconds(30))]
        try await withWebSocket(MockWebSocketEndpoint(behaviour: .script(steps)), at: "/ws") { task, _, server in
            if serverCloses {
                // The client answered the server's close.
                let answer = await server.waitForWebSocketMessages(path: "/ws", count: 1)
                #expect(answer == [.close(code: 1000, reason: "")])
            } else {
                try await task.sendPing()
                task.cancel(with: .normalClosure, reason: nil)
            }
            let sendError = await #expect(throws: POSIXError.self) { try await task.send(.string("late")) }
            #expect(sendError?.code == .ENOTCONN)
            let pingError = await #expect(throws: POSIXError.self) { try await task.sendPing() }
            #expect(pingError?.code == .ENOTCONN)
        }
    }

    /// A close frame without a status code is a close handshake all the same: the delegate hears it with 1005
    /// (RFC 6455 §7.1.5: the close code is then "considered to be 1005"), `closeCode` says so, and the task ends
    /// without an error. (The server here closes TCP once the client answered, without a second close frame.)
    @Test func aServerCloseWithoutAStatusCodeIsReportedAsNoStatusReceived() async throws {
        try await withWebSocket(.script(.close(code: nil)), at: "/s") { task, recorder, server in
            try await recorder.completion()
            #expect(recorder.events == [.opened(nil), .closed(.noStatusReceived, nil), .completed(nil)])
            #expect(task.closeCode == .noStatusReceived)
            #expect(task.closeReason == nil)
            // The client answered with a close frame without a code either.
            #expect(server.webSocketMessages(path: "/s") == [.close(code: nil, reason: "")])
        }
    }

    @Test func largeMessagesUpToTheLimitPassAndALargerOneEndsTheTaskWith1009() async throws {
        try await withServer { server in
            server.webSocket("/echo", endpoint: .echo)
            let session = makeSession()
            defer { session.finishTasksAndInvalidate() }
            let big = session.webSocketTask(with: try Self.webSocketURL(server, "/echo"))
            // Four times the default limit, and no more: a debug build masks and unmasks it byte by byte on the
            // event loops, which are shared with every other test running at the time.
            big.maximumMessageSize = 4 << 20
            big.resume()
            let payload = Data(MockBody.patternBytes(offset: 0, count: 4 << 20))
            try await big.send(.data(payload))
            guard case .data(let echoed) = try await big.receive() else {
                Issue.record("no echo")
                return
            }
            #expect(echoed == payload)
            big.cancel(with: .normalClosure, reason: nil)

            let limited = session.webSocketTask(with: try Self.webSocketURL(server, "/echo"))
            limited.resume()
            try await limited.send(.data(Data(count: 1 << 20)))
            guard case .data(let exact) = try await limited.receive() else {
                Issue.record("a message of exactly the limit was refused")
                return
            }
            #expect(exact.count == 1 << 20)
            try await limited.send(.data(Data(count: (1 << 20) + 1)))
            let error = await #expect(throws: POSIXError.self) { try await limited.receive() }
            #expect(error?.code == .EMSGSIZE)
            #expect(limited.closeCode == .messageTooBig)
            let messages = await server.waitForWebSocketMessages(path: "/echo", count: 5)
            #expect(messages.contains(.close(code: 1009, reason: "")))
        }
    }

    /// A `maximumMessageSize` of zero or less sets no limit, as a maximum message size of 0 does in the Network
    /// framework: an empty message and one over the default 1 MiB both arrive. Before the fix the size was taken
    /// literally: -1 refused even the empty message, and 0 every message but an empty one (both with 1009).
    @Test(arguments: [0, -1])
    func aMaximumMessageSizeOfZeroOrLessSetsNoLimit(size: Int) async throws {
        try await withServer { server in
            let big = Data((0..<((1 << 20) + 1)).map { UInt8(truncatingIfNeeded: $0 &* 7) })
            server.webSocket("/ws", endpoint: .script(.send(text: ""), .send(data: big), .wait(.seconds(30))))
            let session = makeSession()
            defer { session.invalidateAndCancel() }
            let task = session.webSocketTask(with: try Self.webSocketURL(server, "/ws"))
            task.maximumMessageSize = size
            task.resume()
            guard case .string(let empty) = try await task.receive() else {
                Issue.record("not a text message")
                return
            }
            #expect(empty.isEmpty)
            guard case .data(let received) = try await task.receive() else {
                Issue.record("not a binary message")
                return
            }
            let whole = received == big
            #expect(whole)
            #expect(task.maximumMessageSize == size)
            #expect(task.closeCode == .invalid)
        }
    }

    @Test func tenThousandSmallMessagesArriveInOrder() async throws {
        try await withWebSocket(.echo, at: "/echo") { task, recorder, server in
            let count = 10_000
            async let sent: Void = {
                for index in 0..<count { try await task.send(.string("\(index)")) }
            }()
            for index in 0..<count {
                guard case .string(let text) = try await task.receive(), text == "\(index)" else {
                    Issue.record("message \(index) out of order")
                    return
                }
            }
            try await sent
            task.cancel(with: .normalClosure, reason: nil)
        }
    }

    /// A server that breaks the handshake: the task fails with `badServerResponse` and never opens.
    @Test(arguments: [
        MockWebSocketEndpoint.HandshakeOverride.response(.ok("not a WebSocket")), .badAccept, .missingUpgradeHeader,
        .unrequestedSubprotocol("surprise"),
    ])
    func aBrokenHandshakeFailsTheTask(_ override: MockWebSocketEndpoint.HandshakeOverride) async throws {
        try await withWebSocket(MockWebSocketEndpoint(handshake: override), at: "/ws") { task, recorder, server in
            let error = await #expect(throws: URLError.self) { try await task.receive() }
            #expect(error?.code == .badServerResponse)
            try await recorder.completion()
            #expect(recorder.events == [.completed(.badServerResponse)])
        }
    }

    /// Frames a server may not send: the task ends with the close code RFC 6455 names, never a hang.
    @Test(arguments: [
        (
            MockWebSocketFrame.bytes(opcode: MockWebSocketFrame.Opcode.text, masked: true, payload: Array("x".utf8)),
            1002
        ),
        (MockWebSocketFrame.bytes(opcode: 0x3, payload: []), 1002),
        (MockWebSocketFrame.bytes(opcode: MockWebSocketFrame.Opcode.text, rsv: 0x4, payload: []), 1002),
        (MockWebSocketFrame.bytes(opcode: MockWebSocketFrame.Opcode.close, payload: [0x03, 0xED]), 1002),
        (MockWebSocketFrame.bytes(opcode: MockWebSocketFrame.Opcode.text, payload: [0xC3, 0x28]), 1007),
        // RFC 6455 §5.2: a 64-bit length's most significant bit "MUST be 0" — a protocol error, not a message too big
        // (1009); likewise a ping whose 64-bit length is far over the limit: a control frame is at most 125 bytes.
        ([UInt8]([0x82, 127, 0x80, 0, 0, 0, 0, 0, 0, 0]), 1002),
        ([UInt8]([0x89, 127, 0, 0, 0, 1, 0, 0, 0, 0]), 1002),
    ])
    func aServerThatBreaksTheFramingEndsTheTask(frame: [UInt8], closeCode: Int) async throws {
        try await withServer { server in
            // The server then waits long: a task that failed only when the server closed would take 30 s.
            server.webSocket("/ws", endpoint: .script(.sendRaw(frame), .wait(.seconds(30))))
            let session = makeSession()
            defer { session.finishTasksAndInvalidate() }
            let task = session.webSocketTask(with: try Self.webSocketURL(server, "/ws"))
            task.resume()
            let start = ContinuousClock.now
            let error = await #expect(throws: (any Error).self) { try await task.receive() }
            // Far below the server's 30 s, with room for a machine that holds the test for seconds.
            #expect(ContinuousClock.now - start < .seconds(25))
            #expect((error as? URLError)?.code == .badServerResponse)
            #expect(task.closeCode.rawValue == closeCode)
        }
    }

    @Test func aFragmentedMessageWithAPingBetweenItsFragmentsArrivesWhole() async throws {
        try await withServer { server in
            server.webSocket(
                "/ws",
                endpoint: .script(
                    .sendFragmented(text: "fragmenté en morceaux", fragmentSize: 3, pingBetween: Data([7])),
                    .wait(.seconds(5))))
            let session = makeSession()
            defer { session.invalidateAndCancel() }
            let task = session.webSocketTask(with: try Self.webSocketURL(server, "/ws"))
            task.resume()
            guard case .string(let text) = try await task.receive() else {
                Issue.record("not a text message")
                return
            }
            #expect(text == "fragmenté en morceaux")
            // The ping between the fragments was answered.
            let pong = await server.waitForWebSocketMessages(path: "/ws", count: 1)
            #expect(pong == [.pong(Data([7]))])
        }
    }

    @Test func anAppThatStopsReceivingStopsTheReading() async throws {
        try await withServer { server in
            // 64 MiB in 1 MiB messages, far more than the socket buffers and the 16 messages read ahead together,
            // then a ping: the client can answer it only once it has read everything before it.
            let steps =
                Array(repeating: MockWebSocketStep.send(data: Data(count: 1 << 20)), count: 64) + [
                    .sendPing(Data([9])), .wait(.seconds(10)),
                ]
            server.webSocket("/flood", endpoint: MockWebSocketEndpoint(behaviour: .script(steps)))
            let session = makeSession()
            defer { session.invalidateAndCancel() }
            let task = session.webSocketTask(with: try Self.webSocketURL(server, "/flood"))
            task.resume()
            try await Task.sleep(for: .seconds(1))
            // Nothing received by the app: the client stopped reading, so the ping behind the messages is unread.
            #expect(server.webSocketMessages(path: "/flood").isEmpty)
            for _ in 0..<64 {
                guard case .data(let data) = try await task.receive(), data.count == 1 << 20 else {
                    Issue.record("a message was lost")
                    return
                }
            }
            let pong = await server.waitForWebSocketMessages(path: "/flood", count: 1)
            #expect(pong == [.pong(Data([9]))])
        }
    }

    /// RFC 6455 §5.5.3: "A Pong frame MAY be sent unsolicited. This serves as a unidirectional heartbeat." Such a
    /// pong answers no ping: the ping's handler waits for its own pong, and hears the error when the connection
    /// closes without one — it does not report a pong the server never sent for it.
    @Test func anUnsolicitedPongDoesNotAnswerAPing() async throws {
        let heartbeat = MockWebSocketFrame.bytes(opcode: MockWebSocketFrame.Opcode.pong, payload: Array("beat".utf8))
        let steps: [MockWebSocketStep] = [
            .ignorePings, .expectMessage, .expectMessage, .sendRaw(heartbeat), .send(text: "after the heartbeat"),
            .wait(.seconds(30)),
        ]
        try await withWebSocket(MockWebSocketEndpoint(behaviour: .script(steps)), at: "/ws") {
            task, recorder, server in
            try await task.send(.string("open"))
            let answers = NIOLockedValueBox<[String]>([])
            task.sendPing { error in answers.withLockedValue { $0.append(error == nil ? "pong" : "error") } }
            // Written after the ping: the server's heartbeat comes once it has both, so after the ping went out.
            try await task.send(.string("after the ping"))
            // Frames are read in order: once this message is here, the heartbeat before it was read too.
            guard case .string("after the heartbeat") = try await task.receive() else {
                Issue.record("the server's message did not arrive")
                return
            }
            #expect(answers.withLockedValue { $0 }.isEmpty, "an unsolicited pong answered the ping")
            task.cancel(with: .normalClosure, reason: nil)
            try await recorder.completion()
            try await waitUntil { !answers.withLockedValue { $0 }.isEmpty }
            #expect(answers.withLockedValue { $0 } == ["error"])
        }
    }

    /// `cancel()` on an open WebSocket is a cancel like any task's: `state` says `canceling` at once and the session
    /// stops listing the task, until its completion (`cancelled`) makes it `completed`. Before the fix it stayed
    /// `running`, and listed, until the connection's close came back from its event loop.
    @Test func cancellingAnOpenWebSocketMakesItCancelingAtOnce() async throws {
        try await withServer { server in
            server.webSocket("/echo", endpoint: .echo)
            let recorder = WebSocketRecorder()
            let session = makeSession(delegate: recorder)
            defer { session.finishTasksAndInvalidate() }
            let task = session.webSocketTask(with: try Self.webSocketURL(server, "/echo"))
            task.resume()
            try await task.send(.string("hello"))
            _ = try await task.receive()
            #expect(task.state == .running)
            task.cancel()
            // `completed` only if the close already came back.
            #expect(task.state == .canceling || task.state == .completed)
            let listed = await session.allTasks
            #expect(listed.isEmpty)
            try await recorder.completion()
            #expect(recorder.events == [.opened(nil), .completed(.cancelled)])
            #expect(task.state == .completed)
            #expect((task.error as? URLError)?.code == .cancelled)
        }
    }

    /// After `cancel()`, a send and a ping fail as the task does, with `URLError(.cancelled)`, whether or not the
    /// connection's end has come back from its event loop yet. Before the fix those made right after the cancel
    /// reached the connection after its abort and failed as a lost connection (`networkConnectionLost`), and only
    /// later ones as cancelled.
    @Test func sendsAndPingsRightAfterCancelFailAsCancelled() async throws {
        try await withWebSocket(.echo, at: "/echo") { task, recorder, _ in
            try await task.send(.string("hello"))
            _ = try await task.receive()
            task.cancel()
            let pingError = await #expect(throws: URLError.self) { try await task.sendPing() }
            #expect(pingError?.code == .cancelled)
            let sendError = await #expect(throws: URLError.self) { try await task.send(.string("late")) }
            #expect(sendError?.code == .cancelled)
            try await recorder.completion()
            let laterPingError = await #expect(throws: URLError.self) { try await task.sendPing() }
            #expect(laterPingError?.code == .cancelled)
        }
    }

    @Test func anAbruptCloseIsAConnectionLost() async throws {
        try await withWebSocket(.script(.dropConnection), at: "/ws") { task, recorder, server in
            let error = await #expect(throws: URLError.self) { try await task.receive() }
            #expect(error?.code == .networkConnectionLost)
            try await recorder.completion()
            #expect(recorder.events == [.opened(nil), .completed(.networkConnectionLost)])
            #expect(task.closeCode == .invalid)
        }
    }

    /// The server hangs up right after its `101`, and the task learns of the `101` only after NIO tore the closed
    /// connection's pipeline down (here a cookie storage subclass stores the `101`'s cookie slowly): the task still
    /// ends, as a lost connection, instead of staying open forever with its receives waiting.
    @Test func aServerThatHangsUpBeforeTheTaskTakesTheConnectionOverEndsTheTask() async throws {
        try await withServer { server in
            server.webSocket(
                "/ws",
                endpoint: MockWebSocketEndpoint(
                    behaviour: .script([.dropConnection]), extraResponseHeaders: [(name: "Set-Cookie", value: "a=b")]))
            let recorder = WebSocketRecorder()
            let session = makeSession(delegate: recorder) { $0.httpCookieStorage = SlowCookieStorage() }
            defer { session.invalidateAndCancel() }
            let task = session.webSocketTask(with: try Self.webSocketURL(server, "/ws"))
            task.resume()
            try await recorder.completion(timeout: .seconds(20))
            #expect(recorder.events == [.opened(nil), .completed(.networkConnectionLost)])
        }
    }

    /// `cancel(with:reason:)` with a code RFC 6455 §7.4.1 forbids on the wire (the enumeration has them, for what
    /// a task reports): the close frame goes out without a status, which a server accepts, instead of with a code
    /// that makes a conforming server fail the connection with 1002.
    @Test(
        .serialized,
        arguments: [
            URLSessionWebSocketTask.CloseCode.invalid, .noStatusReceived, .abnormalClosure, .tlsHandshakeFailure,
            .other(1004), .other(-1), .other(70_000),
        ])
    func aCloseCodeThatMayNotBeSentGoesOutAsACloseWithoutStatus(_ code: URLSessionWebSocketTask.CloseCode)
        async throws
    {
        try await withWebSocket(.echo, at: "/echo") { task, recorder, server in
            try await task.sendPing()
            task.cancel(with: code, reason: Data("bye".utf8))
            try await recorder.completion()
            #expect(recorder.events.last == .completed(nil))
            let received = await server.waitForWebSocketMessages(path: "/echo", count: 2, timeout: .seconds(10))
            #expect(received.last == .close(code: nil, reason: ""))
        }
    }

    /// An application's code (3000–4999), which Darwin's `CloseCode` holds as an imported C enumeration does
    /// (`CloseCode(rawValue: 4001)!` works there), goes out as it is and comes back as it is.
    @Test func anApplicationsCloseCodeGoesOutAndComesBack() async throws {
        let code = try #require(URLSessionWebSocketTask.CloseCode(rawValue: 4001))
        #expect(code.rawValue == 4001 && code == .other(4001) && code != .normalClosure)
        #expect(URLSessionWebSocketTask.CloseCode(rawValue: 1000) == .normalClosure)
        #expect(URLSessionWebSocketTask.CloseCode.other(1001) == .goingAway)
        #expect(Set([code, .other(4001), .normalClosure, .other(1000)]).count == 2)
        try await withWebSocket(.echo, at: "/echo") { task, recorder, server in
            try await task.sendPing()
            task.cancel(with: code, reason: Data("app code".utf8))
            try await recorder.completion()
            let received = await server.waitForWebSocketMessages(path: "/echo", count: 2, timeout: .seconds(10))
            #expect(received.last == .close(code: 4001, reason: "app code"))
            #expect(recorder.events == [.opened(nil), .closed(.other(4001), "app code"), .completed(nil)])
            #expect(task.closeCode.rawValue == 4001)
        }
    }

    /// A close reason longer than a control frame holds (125 bytes with the code, RFC 6455 §5.5) is cut, at a
    /// character boundary, instead of going out in a frame a conforming server refuses.
    @Test func aLongCloseReasonIsCutToWhatACloseFrameHolds() async throws {
        try await withWebSocket(.echo, at: "/echo") { task, recorder, server in
            try await task.sendPing()
            task.cancel(with: .goingAway, reason: Data(String(repeating: "é", count: 200).utf8))
            try await recorder.completion()
            #expect(recorder.events.last == .completed(nil))
            let received = await server.waitForWebSocketMessages(path: "/echo", count: 2, timeout: .seconds(10))
            #expect(received.last == .close(code: 1001, reason: String(repeating: "é", count: 61)))
        }
    }

    @Test func aServerThatIgnoresTheCloseIsLeftAfterTheTimeout() async throws {
        let endpoint = MockWebSocketEndpoint.script(.ignoreClose, .wait(.seconds(30)))
        try await withWebSocket(endpoint, at: "/ws", closeTimeout: .seconds(1)) { task, recorder, server in
            try await task.sendPing()
            task.cancel(with: .normalClosure, reason: nil)
            // The close timeout (1 s here) ends it, well before the server's 30 s (room for a loaded machine).
            try await recorder.completion(timeout: .seconds(25))
            #expect(recorder.events.last == .completed(.timedOut))
            #expect(task.closeCode == .normalClosure)
        }
    }
}
