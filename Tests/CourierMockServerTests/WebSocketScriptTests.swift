import Foundation
import NIOCore
import Testing

@testable import CourierMockServer

@Suite struct WebSocketScriptTests {
    private typealias Opcode = MockWebSocketFrame.Opcode

    /// Runs `body` with a client upgraded to an endpoint at `/script` running `steps`.
    private func withScript(
        _ steps: [MockWebSocketStep],
        closeTimeout: Duration = .seconds(10),
        _ body: @escaping @Sendable (WebSocketTestClient, MockServer) async throws -> Void
    ) async throws {
        let server = MockServer()
        var endpoint = MockWebSocketEndpoint(behaviour: .script(steps))
        endpoint.closeTimeout = closeTimeout
        server.webSocket("/script", endpoint: endpoint)
        try await withServer(server) { server in
            try await WebSocketTestClient.with(server) { client in
                #expect(try await client.upgrade("/script").status == 101)
                try await body(client, server)
            }
        }
    }

    @Test func sendStepsSendTextBinaryAndPingsUnmasked() async throws {
        let steps: [MockWebSocketStep] = [.send(text: "hello"), .send(data: Data([1, 2, 3])), .sendPing(Data([9]))]
        try await withScript(steps) { client, server in
            #expect(try await client.readFrame() == TestFrame.unmasked(Opcode.text, Array("hello".utf8)))
            #expect(try await client.readFrame() == TestFrame.unmasked(Opcode.binary, [1, 2, 3]))
            #expect(try await client.readFrame() == TestFrame.unmasked(Opcode.ping, [9]))
            try await client.sendFrame(opcode: Opcode.pong, payload: [9])
            #expect(await server.waitForWebSocketMessages(path: "/script", count: 1) == [.pong(Data([9]))])
        }
    }

    @Test func expectMessageWaitsForTheClient() async throws {
        try await withScript([.expectMessage, .send(text: "got it")]) { client, server in
            let outbound = client.outbound
            let clock = ContinuousClock()
            let start = clock.now
            Task {
                try await Task.sleep(for: .milliseconds(300))
                let frame = MockWebSocketFrame.bytes(opcode: Opcode.text, masked: true, payload: Array("first".utf8))
                try await outbound.write(ByteBuffer(bytes: frame))
            }
            let answer = try await client.readFrame()
            #expect(answer.text == "got it")
            #expect(clock.now - start >= .milliseconds(300))
            #expect(server.webSocketMessages(path: "/script") == [.text("first")])
        }
    }

    @Test func messagesThatCameEarlyAreKeptForTheStepsThatWait() async throws {
        let steps: [MockWebSocketStep] = [.wait(.milliseconds(300)), .expectMessage, .echoNext(1), .send(text: "end")]
        try await withScript(steps) { client, _ in
            try await client.send(text: "one")
            try await client.send(text: "two")
            #expect(try await client.readFrame().text == "two")
            #expect(try await client.readFrame().text == "end")
        }
    }

    @Test func echoNextEchoesThatManyMessagesThenGoesOn() async throws {
        try await withScript([.echoNext(2), .send(text: "done")]) { client, server in
            try await client.send(text: "a")
            try await client.sendFrame(opcode: Opcode.binary, payload: [0xFF])
            try await client.send(text: "c")
            let frames = [try await client.readFrame(), try await client.readFrame(), try await client.readFrame()]
            #expect(frames.map(\.opcode) == [Opcode.text, Opcode.binary, Opcode.text])
            #expect(frames.map(\.payload) == [Array("a".utf8), [0xFF], Array("done".utf8)])
            // The third message is recorded but not echoed.
            #expect(await server.waitForWebSocketMessages(path: "/script", count: 3).last == .text("c"))
        }
    }

    @Test func sendFragmentedSplitsTheMessageWithAPingBetween() async throws {
        let text = "héllo wörld"
        let steps: [MockWebSocketStep] = [
            .sendFragmented(text: text, fragmentSize: 4, pingBetween: Data([7])),
            .sendFragmented(data: Data([1, 2, 3, 4, 5]), fragmentSize: 2),
        ]
        try await withScript(steps) { client, _ in
            let bytes = Array(text.utf8)
            let first = try await client.readFrame()
            #expect(first == TestFrame.unmasked(Opcode.text, Array(bytes[0..<4]), fin: false))
            #expect(try await client.readFrame() == TestFrame.unmasked(Opcode.ping, [7]))
            var reassembled = first.payload
            var fragment = try await client.readFrame()
            while true {
                #expect(fragment.opcode == Opcode.continuation)
                #expect(fragment.payload.count == min(4, bytes.count - reassembled.count))
                reassembled += fragment.payload
                if fragment.fin { break }
                fragment = try await client.readFrame()
            }
            #expect(reassembled == bytes)

            let binary = [try await client.readFrame(), try await client.readFrame(), try await client.readFrame()]
            #expect(binary.map(\.opcode) == [Opcode.binary, Opcode.continuation, Opcode.continuation])
            #expect(binary.map(\.fin) == [false, false, true])
            #expect(binary.map(\.payload) == [[1, 2], [3, 4], [5]])
        }
    }

    @Test func waitDelaysTheNextStep() async throws {
        let server = MockServer()
        let steps: [MockWebSocketStep] = [.send(text: "1"), .wait(.milliseconds(400)), .send(text: "2")]
        server.webSocket("/script", endpoint: MockWebSocketEndpoint(behaviour: .script(steps)))
        try await withServer(server) { server in
            try await WebSocketTestClient.with(server) { client in
                // Timed from before the upgrade: "2" cannot come sooner however late the client reads.
                let clock = ContinuousClock()
                let start = clock.now
                #expect(try await client.upgrade("/script").status == 101)
                let first = try await client.readFrame()
                #expect(first.text == "1")
                let second = try await client.readFrame()
                #expect(second.text == "2")
                #expect(clock.now - start >= .milliseconds(400))
            }
        }
    }

    @Test func closeSendsACloseFrameAndClosesWhenTheClientAnswers() async throws {
        // The server waits two minutes for the answer: a machine stalled for seconds still delivers it (a fresh-clone
        // run once read the close frame after the 10 s default had passed, and the server had closed unanswered).
        let steps: [MockWebSocketStep] = [.close(code: 4000, reason: "bye"), .send(text: "never")]
        try await withScript(steps, closeTimeout: .seconds(120)) { client, server in
            let close = try await client.readFrame()
            #expect(close.opcode == Opcode.close)
            #expect(close.payload == [0x0F, 0xA0] + Array("bye".utf8))
            let clock = ContinuousClock()
            let start = clock.now
            try await client.sendClose(code: 4000)
            #expect(try await client.readToEnd().isEmpty)
            // Long before the timeout: the client's close ended it.
            #expect(clock.now - start < .seconds(60))
            #expect(server.webSocketMessages(path: "/script") == [.close(code: 4000, reason: "")])
        }
    }

    @Test func closeClosesTheConnectionAfterATimeoutWhenTheClientDoesNotAnswer() async throws {
        // Timed from before the upgrade, so before the server's timer started: an immediate close would take
        // milliseconds, the timeout at least 2 s.
        let clock = ContinuousClock()
        let start = clock.now
        try await withScript([.close(code: nil)], closeTimeout: .seconds(2)) { client, server in
            let close = try await client.readFrame()
            #expect(close.opcode == Opcode.close)
            #expect(close.payload.isEmpty)
            #expect(try await client.readToEnd().isEmpty)
            #expect(clock.now - start >= .seconds(2))
            #expect(server.webSocketMessages(path: "/script").isEmpty)
        }
    }

    @Test func sendRawWritesTheBytesVerbatim() async throws {
        let maskedText = MockWebSocketFrame.bytes(opcode: Opcode.text, masked: true, payload: Array("hi".utf8))
        let reservedOpcode = MockWebSocketFrame.bytes(opcode: 0x3, rsv: 0b100, payload: [1])
        let overlong = MockWebSocketFrame.bytes(opcode: Opcode.binary, payload: [1, 2], declaredLength: 5)
        try await withScript([.sendRaw(maskedText), .sendRaw(reservedOpcode), .sendRaw(overlong)]) { client, _ in
            let frame = try await client.readFrame()
            #expect(frame.masked)
            #expect(frame.text == "hi")
            // The frame that lies about its length ends the stream.
            let rest = reservedOpcode + overlong
            #expect(try await client.readBytes(rest.count) == rest)
        }
    }

    @Test func dropConnectionClosesWithoutACloseFrame() async throws {
        let steps: [MockWebSocketStep] = [.send(text: "last words"), .dropConnection, .send(text: "never")]
        try await withScript(steps) { client, _ in
            let last = try await client.readFrame()
            #expect(last.text == "last words")
            #expect(try await client.readToEnd().isEmpty)
        }
    }

    @Test func ignoreCloseLeavesTheClientsCloseUnanswered() async throws {
        try await withScript([.ignoreClose, .expectMessage, .wait(.milliseconds(300)), .send(text: "still here")]) {
            client,
            server in
            try await client.send(text: "ping?")
            try await client.sendClose(code: 1001)
            // The next thing the server sends is the text, not a close.
            let next = try await client.readFrame()
            #expect(next.opcode == Opcode.text)
            #expect(next.text == "still here")
            #expect(server.webSocketMessages(path: "/script") == [.text("ping?"), .close(code: 1001, reason: "")])
        }
    }

    @Test func ignorePingsLeavesTheClientsPingsUnanswered() async throws {
        try await withScript([.ignorePings, .expectMessage, .send(text: "still here")]) { client, server in
            try await client.sendFrame(opcode: Opcode.ping, payload: [5])
            try await client.send(text: "after the ping")
            // The next thing the server sends is the text, not a pong.
            let next = try await client.readFrame()
            #expect(next.opcode == Opcode.text)
            #expect(next.text == "still here")
            #expect(server.webSocketMessages(path: "/script") == [.ping(Data([5])), .text("after the ping")])
        }
    }

    @Test func aClientCloseEndsTheScriptAndIsAnswered() async throws {
        try await withScript([.expectMessage, .send(text: "never")]) { client, _ in
            try await client.sendClose(code: 1000, reason: "early")
            let close = try await client.readFrame()
            #expect(close.closeCode == 1000)
            #expect(close.closeReason == "early")
            #expect(try await client.readToEnd().isEmpty)
        }
    }

    @Test func pingsAreAnsweredWhileTheScriptWaits() async throws {
        try await withScript([.wait(.seconds(30))]) { client, _ in
            try await client.sendFrame(opcode: Opcode.ping, payload: [4, 2])
            #expect(try await client.readFrame() == TestFrame.unmasked(Opcode.pong, [4, 2]))
        }
    }
}
