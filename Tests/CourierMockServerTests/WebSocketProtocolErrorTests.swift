import Foundation
import Testing

@testable import CourierMockServer

/// A frame a client must not send, and the close code the server must fail the connection with.
struct ClientViolation: Sendable, CustomTestStringConvertible {
    private typealias Opcode = MockWebSocketFrame.Opcode

    var name: String
    var bytes: [UInt8]
    var code: UInt16

    var testDescription: String { name }

    static let all: [ClientViolation] = [
        ClientViolation(
            name: "unmasked frame",
            bytes: MockWebSocketFrame.bytes(opcode: Opcode.text, payload: Array("hi".utf8)),
            code: 1002
        ),
        ClientViolation(
            name: "invalid UTF-8 text", bytes: masked(Opcode.text, [0x68, 0xC3, 0x28]), code: 1007),
        ClientViolation(
            name: "invalid UTF-8 across fragments",
            bytes: masked(Opcode.text, [0xE2, 0x82], fin: false)
                + masked(Opcode.continuation, [0x41]),
            code: 1007
        ),
        ClientViolation(name: "reserved opcode", bytes: masked(0x3, [1]), code: 1002),
        ClientViolation(name: "reserved control opcode", bytes: masked(0xB, []), code: 1002),
        ClientViolation(
            name: "RSV1 without an extension",
            bytes: MockWebSocketFrame.bytes(
                opcode: Opcode.text, rsv: 0b100, masked: true, payload: [0x61]),
            code: 1002
        ),
        ClientViolation(
            name: "continuation without a message", bytes: masked(Opcode.continuation, [1]),
            code: 1002),
        ClientViolation(
            name: "new message inside a fragmented one",
            bytes: masked(Opcode.text, [0x61], fin: false)
                + masked(Opcode.text, [0x62]),
            code: 1002
        ),
        ClientViolation(
            name: "close code 1005",
            bytes: masked(Opcode.close, MockWebSocketFrame.closePayload(code: 1005)),
            code: 1002
        ),
        ClientViolation(
            name: "close code 999",
            bytes: masked(Opcode.close, MockWebSocketFrame.closePayload(code: 999)),
            code: 1002
        ),
        ClientViolation(
            name: "one-byte close payload", bytes: masked(Opcode.close, [0x03]), code: 1002),
        ClientViolation(
            name: "close reason not UTF-8",
            bytes: masked(Opcode.close, MockWebSocketFrame.closePayload(code: 1000) + [0xFF]),
            code: 1007
        ),
        ClientViolation(
            name: "fragmented ping", bytes: masked(Opcode.ping, [1], fin: false), code: 1002),
        ClientViolation(
            name: "ping over 125 bytes",
            bytes: masked(Opcode.ping, [UInt8](repeating: 1, count: 126)),
            code: 1002
        ),
        ClientViolation(
            name: "frame over 64 MiB",
            bytes: MockWebSocketFrame.bytes(
                opcode: Opcode.binary,
                masked: true,
                payload: [],
                declaredLength: 64 * 1024 * 1024 + 1
            ),
            code: 1009
        ),
    ]

    private static func masked(_ opcode: UInt8, _ payload: [UInt8], fin: Bool = true) -> [UInt8] {
        MockWebSocketFrame.bytes(opcode: opcode, fin: fin, masked: true, payload: payload)
    }
}

@Suite struct WebSocketProtocolErrorTests {
    private typealias Opcode = MockWebSocketFrame.Opcode

    @Test(arguments: ClientViolation.all)
    func aClientViolationFailsTheConnectionWithTheRightCode(violation: ClientViolation) async throws {
        let server = MockServer()
        server.webSocket("/echo")
        try await withServer(server) { server in
            try await WebSocketTestClient.with(server) { client in
                #expect(try await client.upgrade("/echo").status == 101)
                try await client.send(violation.bytes)
                let close = try await client.readFrame()
                #expect(close.opcode == Opcode.close)
                #expect(close.closeCode == violation.code)
                #expect(!close.masked)
                // Nothing after the close frame but the end of the connection, once the client answers (the server
                // may already have closed).
                try? await client.sendClose(code: violation.code)
                #expect(try await client.readToEnd().isEmpty)
            }
            // Nothing of the offending frame was recorded as a message.
            #expect(!server.webSocketMessages(path: "/echo").contains { if case .text = $0 { true } else { false } })
        }
    }

    @Test func theServerReadsTheClientsCloseAfterFailingAndClosesAtOnce() async throws {
        let server = MockServer()
        server.webSocket("/echo")
        try await withServer(server) { server in
            try await WebSocketTestClient.with(server) { client in
                #expect(try await client.upgrade("/echo").status == 101)
                try await client.send(MockWebSocketFrame.bytes(opcode: 0x3, masked: true, payload: []))
                #expect(try await client.readFrame().closeCode == 1002)
                let clock = ContinuousClock()
                let start = clock.now
                try await client.sendClose(code: 1002)
                #expect(try await client.readToEnd().isEmpty)
                // Well before the 10 s close timeout, with room for a machine that stalls for seconds.
                #expect(clock.now - start < .seconds(8))
            }
            #expect(server.webSocketMessages(path: "/echo") == [.close(code: 1002, reason: "")])
        }
    }
}
