import Testing

@testable import CourierHTTP

/// The client side of RFC 6455: the handshake's checks and the rules for the frames a server may send.
@Suite("WebSocket protocol rules")
struct WebSocketProtocolTests {
    typealias Frame = WebSocketMessageAssembler.Frame
    typealias Op = WebSocketMessageAssembler.Opcode

    /// RFC 6455 §1.3's worked example.
    static let example = WebSocketHandshake(key: "dGhlIHNhbXBsZSBub25jZQ==", offeredProtocols: ["chat", "superchat"])

    static func headers(_ fields: [String: String]) -> (String) -> String? {
        { name in fields.first { $0.key.lowercased() == name.lowercased() }?.value }
    }

    static let good: [String: String] = [
        "Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Accept": "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=",
    ]

    @Test func theAcceptIsRFC6455sExample() {
        #expect(Self.example.expectedAccept == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        #expect(WebSocketHandshake(offeredProtocols: []).key.count == 24)
        #expect(WebSocketHandshake.offeredProtocols(in: ["chat, superchat", " v2 "]) == ["chat", "superchat", "v2"])
    }

    /// RFC 6455 §5.5.2–5.5.3: a pong answers the ping whose payload it echoes and the pings before it (a server may
    /// answer only the latest of several); an unsolicited pong, or one echoing nothing outstanding, answers none.
    @Test func pongsAnswerThePingsTheyEcho() {
        var pings = WebSocketPings()
        let first = pings.sent()
        let second = pings.sent()
        let third = pings.sent()
        #expect(first.count == 8 && Set([first, second, third]).count == 3)
        #expect(pings.pongReceived([]) == 0)  // a heartbeat
        #expect(pings.pongReceived(Array("heartbeat".utf8)) == 0)
        #expect(pings.count == 3)
        #expect(pings.pongReceived(second) == 2)  // the first and the second
        #expect(pings.pongReceived(first) == 0)  // late: already answered
        #expect(pings.pongReceived(third) == 1)
        #expect(pings.count == 0)
        _ = pings.sent()
        pings.removeAll()
        #expect(pings.count == 0)
    }

    @Test func aGoodAnswerGivesTheChosenProtocol() throws {
        #expect(try Self.example.validate(status: 101, header: Self.headers(Self.good)) == "")
        var chose = Self.good
        chose["Sec-WebSocket-Protocol"] = "superchat"
        chose["Connection"] = "keep-alive, Upgrade"
        chose["Upgrade"] = "WebSocket"
        #expect(try Self.example.validate(status: 101, header: Self.headers(chose)) == "superchat")
    }

    @Test(arguments: [
        (200, "Upgrade", "websocket"),
        (101, "Upgrade", "h2c"),
        (101, "Connection", "keep-alive"),
        (101, "Sec-WebSocket-Accept", "AAAAAAAAAAAAAAAAAAAAAAAAAAA="),
        (101, "Sec-WebSocket-Protocol", "unoffered"),
        (101, "Sec-WebSocket-Extensions", "permessage-deflate"),
    ])
    func aBadAnswerIsABadServerResponse(status: Int, field: String, value: String) {
        var fields = Self.good
        fields[field] = value
        #expect(throws: TransferError.self) {
            try Self.example.validate(status: status, header: Self.headers(fields))
        }
        do {
            _ = try Self.example.validate(status: status, header: Self.headers(fields))
        } catch {
            #expect(error.urlErrorCode == .badServerResponse)
        }
    }

    @Test func fragmentsAreReassembledWithControlFramesBetweenThem() {
        var assembler = WebSocketMessageAssembler(maximumMessageSize: 100)
        #expect(assembler.receive(Frame(fin: false, opcode: Op.text, payload: Array("Hel".utf8))) == .none)
        #expect(assembler.receive(Frame(fin: true, opcode: Op.ping, payload: [1])) == .ping([1]))
        #expect(assembler.receive(Frame(fin: false, opcode: Op.continuation, payload: Array("lo, ".utf8))) == .none)
        // "wörld" split inside the two bytes of "ö": UTF-8 is checked on the whole message.
        let world = Array("wörld".utf8)
        #expect(assembler.receive(Frame(fin: false, opcode: Op.continuation, payload: Array(world[..<2]))) == .none)
        #expect(
            assembler.receive(Frame(fin: true, opcode: Op.continuation, payload: Array(world[2...])))
                == .text("Hello, wörld"))
        #expect(assembler.receive(Frame(fin: true, opcode: Op.binary, payload: [0, 255])) == .binary([0, 255]))
        #expect(assembler.receive(Frame(fin: true, opcode: Op.pong, payload: [])) == .pong([]))
    }

    @Test func closeFramesCarryTheirCodeAndReason() {
        var assembler = WebSocketMessageAssembler(maximumMessageSize: 100)
        #expect(assembler.receive(Frame(fin: true, opcode: Op.close, payload: [])) == .close(code: nil, reason: ""))
        #expect(
            assembler.receive(Frame(fin: true, opcode: Op.close, payload: [0x03, 0xE8] + Array("bye".utf8)))
                == .close(code: 1000, reason: "bye"))
        #expect(
            assembler.receive(Frame(fin: true, opcode: Op.close, payload: [0x0F, 0xA0]))
                == .close(code: 4000, reason: ""))
    }

    /// Each way a server breaks the rules, and the close code the client answers with.
    static let violations: [(Frame, UInt16)] = {
        var cases: [(Frame, UInt16)] = []
        cases.append((Frame(fin: true, opcode: Op.text, isMasked: true, payload: []), 1002))
        cases.append((Frame(fin: true, reservedBits: 0x4, opcode: Op.text, payload: []), 1002))
        cases.append((Frame(fin: true, opcode: 0x3, payload: []), 1002))
        cases.append((Frame(fin: true, opcode: 0xB, payload: []), 1002))
        cases.append((Frame(fin: true, opcode: Op.continuation, payload: [1]), 1002))
        cases.append((Frame(fin: false, opcode: Op.ping, payload: []), 1002))
        cases.append((Frame(fin: true, opcode: Op.ping, payload: Array(repeating: 0, count: 126)), 1002))
        cases.append((Frame(fin: true, opcode: Op.close, payload: [0x03]), 1002))
        cases.append((Frame(fin: true, opcode: Op.close, payload: [0x03, 0xED]), 1002))  // 1005 never goes on the wire
        cases.append((Frame(fin: true, opcode: Op.close, payload: [0x03, 0xEE]), 1002))  // nor 1006
        cases.append((Frame(fin: true, opcode: Op.close, payload: [0x00, 0x00]), 1002))
        cases.append((Frame(fin: true, opcode: Op.close, payload: [0x03, 0xE8, 0xC3, 0x28]), 1007))
        cases.append((Frame(fin: true, opcode: Op.text, payload: [0xC3, 0x28]), 1007))
        cases.append((Frame(fin: true, opcode: Op.text, payload: [0xED, 0xA0, 0x80]), 1007))  // a UTF-16 surrogate
        cases.append((Frame(fin: true, opcode: Op.binary, payload: Array(repeating: 0, count: 101)), 1009))
        return cases
    }()

    @Test(arguments: violations)
    func violationsNameTheirCloseCode(frame: Frame, code: UInt16) {
        var assembler = WebSocketMessageAssembler(maximumMessageSize: 100)
        guard case .violation(let closeCode, _) = assembler.receive(frame) else {
            Issue.record("accepted \(frame)")
            return
        }
        #expect(closeCode == code)
    }

    @Test func aFragmentedMessageOverTheLimitIsTooBigAndANewMessageMayNotInterruptOne() {
        var assembler = WebSocketMessageAssembler(maximumMessageSize: 10)
        #expect(
            assembler.receive(Frame(fin: false, opcode: Op.binary, payload: Array(repeating: 1, count: 6))) == .none)
        guard
            case .violation(1009, _) = assembler.receive(
                Frame(fin: true, opcode: Op.continuation, payload: Array(repeating: 1, count: 5)))
        else {
            Issue.record("an 11-byte message passed a 10-byte limit")
            return
        }
        var other = WebSocketMessageAssembler(maximumMessageSize: 10)
        _ = other.receive(Frame(fin: false, opcode: Op.text, payload: [65]))
        guard case .violation(1002, _) = other.receive(Frame(fin: true, opcode: Op.text, payload: [66])) else {
            Issue.record("a message began inside another")
            return
        }
    }

    /// RFC 6455 §7.4.1 and §5.5: codes an endpoint may not send go out as a close without a status, and a reason is
    /// cut to the 123 bytes a control frame leaves it, before a character that would not fit whole.
    @Test func theCloseFrameAClientSendsHoldsOnlyWhatMayGoOnTheWire() {
        #expect(WebSocketCloseFrame.payload(code: 1000, reason: Array("bye".utf8)) == [0x03, 0xE8] + Array("bye".utf8))
        #expect(WebSocketCloseFrame.payload(code: 4000, reason: []) == [0x0F, 0xA0])
        #expect(WebSocketCloseFrame.payload(code: nil, reason: Array("ignored".utf8)) == [])
        for code: UInt16 in [0, 999, 1004, 1005, 1006, 1015, 2000, 5000] {
            #expect(WebSocketCloseFrame.payload(code: code, reason: Array("bye".utf8)) == [], "\(code)")
        }
        let ascii = [UInt8](repeating: UInt8(ascii: "x"), count: 200)
        #expect(WebSocketCloseFrame.payload(code: 1001, reason: ascii) == [0x03, 0xE9] + Array(ascii.prefix(123)))
        // "é" is two bytes: 61 of them (122 bytes) fit, the 62nd would be cut in half.
        let accents = Array(String(repeating: "é", count: 100).utf8)
        #expect(
            WebSocketCloseFrame.payload(code: 1001, reason: accents)
                == [0x03, 0xE9] + Array(String(repeating: "é", count: 61).utf8))
        let exact = [UInt8](repeating: UInt8(ascii: "y"), count: 123)
        #expect(WebSocketCloseFrame.payload(code: 1000, reason: exact).count == 125)
    }

    /// RFC 6455 §5.2: with a 64-bit payload length, "the most significant bit MUST be 0"; §5.5: a control frame is
    /// whole and at most 125 bytes. Both are protocol errors (1002), found in the header before any size limit (1009)
    /// is applied; a header that does not show its whole length yet waits for more bytes.
    @Test func aFrameHeaderThatBreaksTheFramingIsAProtocolError() {
        func closeCode(_ bytes: [UInt8]) -> UInt16? {
            guard case .violation(let code, _) = WebSocketFrameHeader.check(bytes) else { return nil }
            return code
        }
        #expect(WebSocketFrameHeader.check([]) == .incomplete(needed: 2))
        #expect(WebSocketFrameHeader.check([0x82]) == .incomplete(needed: 2))
        #expect(WebSocketFrameHeader.check([0x82, 5]) == .valid)
        #expect(WebSocketFrameHeader.check([0x02, 126, 0xFF, 0xFF]) == .valid)
        #expect(WebSocketFrameHeader.check([0x82, 127, 0x80, 0]) == .incomplete(needed: 10))
        #expect(WebSocketFrameHeader.check([0x82, 127, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]) == .valid)
        #expect(closeCode([0x82, 127, 0x80, 0, 0, 0, 0, 0, 0, 0]) == 1002)
        #expect(closeCode([0x00, 127, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 7]) == 1002)
        // Control frames: at most 125 bytes, never fragmented.
        #expect(WebSocketFrameHeader.check([0x89, 125]) == .valid)
        #expect(WebSocketFrameHeader.check([0x88, 0]) == .valid)
        #expect(closeCode([0x89, 126]) == 1002)
        #expect(closeCode([0x8A, 127, 0, 0, 0, 1, 0, 0, 0, 0]) == 1002)
        #expect(closeCode([0x09, 1]) == 1002)
    }
}
