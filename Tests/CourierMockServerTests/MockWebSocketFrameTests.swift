import Testing

@testable import CourierMockServer

/// The frame builder against RFC 6455 §5.7's examples and the length encodings of §5.2.
@Suite struct MockWebSocketFrameTests {
    private typealias Opcode = MockWebSocketFrame.Opcode

    @Test func rfcExamplesAreBuiltByteForByte() {
        let hello = Array("Hello".utf8)
        #expect(
            MockWebSocketFrame.bytes(opcode: Opcode.text, payload: hello) == [0x81, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F])
        #expect(
            MockWebSocketFrame.bytes(opcode: Opcode.text, masked: true, payload: hello) == [
                0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58,
            ]
        )
        #expect(
            MockWebSocketFrame.bytes(opcode: Opcode.text, fin: false, payload: Array("Hel".utf8)) == [
                0x01, 0x03, 0x48, 0x65, 0x6C,
            ])
        #expect(
            MockWebSocketFrame.bytes(opcode: Opcode.continuation, payload: Array("lo".utf8)) == [
                0x80, 0x02, 0x6C, 0x6F,
            ])
        #expect(
            MockWebSocketFrame.bytes(opcode: Opcode.ping, payload: hello) == [0x89, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F])
        #expect(
            MockWebSocketFrame.bytes(opcode: Opcode.pong, masked: true, payload: hello) == [
                0x8A, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58,
            ]
        )
    }

    @Test func lengthsUseTheShortestEncoding() {
        let short = MockWebSocketFrame.bytes(opcode: Opcode.binary, payload: [UInt8](repeating: 0, count: 125))
        #expect(Array(short.prefix(2)) == [0x82, 125])
        #expect(short.count == 127)
        let medium = MockWebSocketFrame.bytes(opcode: Opcode.binary, payload: [UInt8](repeating: 0, count: 256))
        #expect(Array(medium.prefix(4)) == [0x82, 0x7E, 0x01, 0x00])
        #expect(medium.count == 260)
        let long = MockWebSocketFrame.bytes(opcode: Opcode.binary, payload: [UInt8](repeating: 0, count: 65536))
        #expect(Array(long.prefix(10)) == [0x82, 0x7F, 0, 0, 0, 0, 0, 1, 0, 0])
        #expect(long.count == 65546)
    }

    @Test func brokenFramesAreBuiltAsAsked() {
        // RSV1 and RSV3 set, a reserved opcode, and a length that lies.
        #expect(
            MockWebSocketFrame.bytes(opcode: 0x3, rsv: 0b101, payload: [9], declaredLength: 4) == [0xD3, 0x04, 0x09])
        #expect(
            MockWebSocketFrame.bytes(opcode: Opcode.binary, payload: [], declaredLength: 70000) == [
                0x82, 0x7F, 0, 0, 0, 0, 0, 1, 0x11, 0x70,
            ])
        #expect(MockWebSocketFrame.closePayload(code: 1000, reason: "ok") == [0x03, 0xE8, 0x6F, 0x6B])
    }

    @Test func maskingLongPayloadsMatchesBytewiseMasking() {
        // Lengths that leave 0 to 7 bytes after the 8-byte words.
        for count in [0, 1, 7, 8, 9, 15, 1000, 1003] {
            let payload = (0..<count).map { UInt8(truncatingIfNeeded: $0 * 31) }
            let frame = MockWebSocketFrame.bytes(opcode: Opcode.binary, masked: true, payload: payload)
            let masked = frame.suffix(count)
            let expected = payload.enumerated().map { $0.element ^ MockWebSocketFrame.maskingKey[$0.offset % 4] }
            #expect(Array(masked) == expected, "payload of \(count) bytes")
        }
    }
}
