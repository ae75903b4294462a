import Foundation
import NIOCore
import Testing

@testable import CourierMockServer

@Suite struct WebSocketEchoTests {
    private typealias Opcode = MockWebSocketFrame.Opcode

    /// Runs `body` with a client upgraded to an echo endpoint at `/echo`, then checks nothing else came.
    private func withEchoClient(
        _ server: MockServer = MockServer(),
        tls: Bool = false,
        _ body: @escaping @Sendable (WebSocketTestClient, MockServer) async throws -> Void
    ) async throws {
        server.webSocket("/echo")
        try await withServer(server) { server in
            try await WebSocketTestClient.with(server, tls: tls) { client in
                #expect(try await client.upgrade("/echo").status == 101)
                try await body(client, server)
            }
        }
    }

    @Test func textAndBinaryMessagesComeBackAsTheyWent() async throws {
        try await withEchoClient { client, server in
            // Lengths on either side of the 7-bit, 16-bit and 64-bit length encodings, and a character outside ASCII.
            let binary = (0..<70_000).map { UInt8($0 % 256) }
            try await client.send(text: "héllo ✓")
            try await client.sendFrame(opcode: Opcode.binary, payload: binary)
            try await client.send(text: "")
            try await client.sendFrame(opcode: Opcode.binary, payload: Array(binary.prefix(126)))

            let frames = [try await client.readFrame(), try await client.readFrame()]
            let more = [try await client.readFrame(), try await client.readFrame()]
            #expect(frames[0] == TestFrame.unmasked(Opcode.text, Array("héllo ✓".utf8)))
            #expect(frames[1] == TestFrame.unmasked(Opcode.binary, binary))
            #expect(more[0] == TestFrame.unmasked(Opcode.text, []))
            #expect(more[1].payload == Array(binary.prefix(126)))
            #expect(
                server.webSocketMessages(path: "/echo") == [
                    .text("héllo ✓"), .data(Data(binary)), .text(""), .data(Data(binary.prefix(126))),
                ]
            )
        }
    }

    @Test func fragmentedClientMessagesAreReassembled() async throws {
        try await withEchoClient { client, server in
            // "é" is split between the first two fragments; a ping comes between fragments.
            let bytes = Array("aé bc".utf8)
            try await client.sendFrame(opcode: Opcode.text, fin: false, payload: Array(bytes[0..<2]))
            try await client.sendFrame(opcode: Opcode.ping, payload: [1])
            try await client.sendFrame(opcode: Opcode.continuation, fin: false, payload: Array(bytes[2..<4]))
            try await client.sendFrame(opcode: Opcode.continuation, payload: Array(bytes[4...]))

            let pong = try await client.readFrame()
            #expect(pong.opcode == Opcode.pong)
            let echo = try await client.readFrame()
            #expect(echo.opcode == Opcode.text)
            #expect(echo.fin)
            #expect(echo.text == "aé bc")
            #expect(server.webSocketMessages(path: "/echo") == [.ping(Data([1])), .text("aé bc")])
        }
    }

    @Test func aSixteenMiBMessageIsEchoedWhole() async throws {
        try await withEchoClient { client, server in
            let size = 16 * 1024 * 1024
            let payload = [UInt8](MockBody.patternBytes(offset: 0, count: size))
            try await client.sendFrame(opcode: Opcode.binary, payload: payload)
            let echo = try await client.readFrame()
            #expect(echo.opcode == Opcode.binary)
            #expect(echo.payload.count == size)
            #expect(sha256Hex(echo.payload) == sha256Hex(payload))

            // The same as text, sent in four fragments.
            let text = String(repeating: "0123456789abcdef", count: size / 16)
            let textBytes = Array(text.utf8)
            for index in 0..<4 {
                let piece = Array(textBytes[(index * size / 4)..<((index + 1) * size / 4)])
                try await client.sendFrame(
                    opcode: index == 0 ? Opcode.text : Opcode.continuation, fin: index == 3, payload: piece)
            }
            let textEcho = try await client.readFrame()
            #expect(textEcho.opcode == Opcode.text)
            #expect(textEcho.payload.count == size)
            #expect(sha256Hex(textEcho.payload) == sha256Hex(textBytes))
            #expect(server.webSocketMessages(path: "/echo").count == 2)
        }
    }

    @Test func tenThousandSmallMessagesComeBackInOrder() async throws {
        try await withEchoClient { client, server in
            let count = 10_000
            var batch: [UInt8] = []
            for index in 0..<count {
                batch += MockWebSocketFrame.bytes(opcode: Opcode.text, masked: true, payload: Array("m\(index)".utf8))
            }
            try await client.send(batch)
            for index in 0..<count {
                let frame = try await client.readFrame()
                guard frame.text == "m\(index)", frame.opcode == Opcode.text else {
                    Issue.record("message \(index) came back as \(frame.text)")
                    return
                }
            }
            let received = server.webSocketMessages(path: "/echo")
            #expect(received.count == count)
            #expect(received.last == .text("m\(count - 1)"))
        }
    }

    @Test func pingsAreAnsweredWithPongsAndPongsAreRecorded() async throws {
        try await withEchoClient { client, server in
            try await client.sendFrame(opcode: Opcode.ping, payload: Array("are you there".utf8))
            let pong = try await client.readFrame()
            #expect(pong == TestFrame.unmasked(Opcode.pong, Array("are you there".utf8)))
            // An unsolicited pong is only recorded; the text after it is the next thing echoed.
            try await client.sendFrame(opcode: Opcode.pong, payload: [7])
            try await client.send(text: "next")
            #expect(try await client.readFrame().text == "next")
            #expect(
                server.webSocketMessages(path: "/echo") == [
                    .ping(Data("are you there".utf8)), .pong(Data([7])), .text("next"),
                ]
            )
        }
    }

    @Test func aClientCloseIsAnsweredWithTheSameCodeThenTheConnectionCloses() async throws {
        try await withEchoClient { client, server in
            try await client.sendClose(code: 4001, reason: "done here")
            let close = try await client.readFrame()
            #expect(close.opcode == Opcode.close)
            #expect(close.closeCode == 4001)
            #expect(close.closeReason == "done here")
            #expect(try await client.readToEnd().isEmpty)
            #expect(server.webSocketMessages(path: "/echo") == [.close(code: 4001, reason: "done here")])
        }
    }

    @Test func anEmptyCloseIsAnsweredWithAnEmptyClose() async throws {
        try await withEchoClient { client, server in
            try await client.sendClose(code: nil)
            let close = try await client.readFrame()
            #expect(close.opcode == Opcode.close)
            #expect(close.payload.isEmpty)
            #expect(try await client.readToEnd().isEmpty)
            #expect(server.webSocketMessages(path: "/echo") == [.close(code: nil, reason: "")])
        }
    }

    @Test func aClientThatStopsReadingStallsTheServer() async throws {
        try await withEchoClient { client, server in
            let count = 48
            let message = [UInt8](repeating: 0x5A, count: 1024 * 1024)
            let frame = MockWebSocketFrame.bytes(opcode: Opcode.binary, masked: true, payload: message)
            let outbound = client.outbound
            let writer = Task {
                for _ in 0..<count {
                    try await outbound.write(ByteBuffer(bytes: frame))
                }
            }
            // The client reads nothing: the server echoes until the socket buffers are full, then stops reading.
            var stalledAt = -1
            var lastCount = -2
            while stalledAt != lastCount {
                lastCount = stalledAt
                try await Task.sleep(for: .milliseconds(500))
                stalledAt = server.webSocketMessages(path: "/echo").count
            }
            #expect(stalledAt < count / 2, "the server read \(stalledAt) of \(count) 1 MiB messages without sending")

            for index in 0..<count {
                let echo = try await client.readFrame()
                guard echo.payload == message else {
                    Issue.record("echo \(index) differs")
                    return
                }
            }
            try await writer.value
            #expect(server.webSocketMessages(path: "/echo").count == count)
        }
    }

    @Test func waitForWebSocketMessagesWaitsAndClearForgets() async throws {
        try await withEchoClient { client, server in
            let outbound = client.outbound
            Task {
                try await Task.sleep(for: .milliseconds(200))
                for text in ["a", "b"] {
                    let frame = MockWebSocketFrame.bytes(opcode: Opcode.text, masked: true, payload: Array(text.utf8))
                    try await outbound.write(ByteBuffer(bytes: frame))
                }
            }
            #expect(server.webSocketMessages(path: "/echo").isEmpty)
            let messages = await server.waitForWebSocketMessages(path: "/echo", count: 2)
            #expect(messages == [.text("a"), .text("b")])
            #expect(server.webSocketMessages(path: "/other").isEmpty)
            let timedOut = await server.waitForWebSocketMessages(path: "/echo", count: 3, timeout: .milliseconds(100))
            #expect(timedOut.count == 2)
            server.clearWebSocketMessages()
            #expect(server.webSocketMessages(path: "/echo").isEmpty)
        }
    }
}
