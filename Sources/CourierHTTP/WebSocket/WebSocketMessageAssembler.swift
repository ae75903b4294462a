/// Turns the frames a WebSocket client receives into messages and control events, enforcing RFC 6455's rules
/// for what a server may send: unmasked frames, no reserved bits (no extension was negotiated), no reserved
/// opcodes, control frames whole and at most 125 bytes, continuation frames only inside a fragmented message,
/// text that is valid UTF-8, close codes that may appear on the wire, and messages no larger than the limit.
///
/// Pure: frames in, events out. A violation ends the connection: the event names the close code to send.
public struct WebSocketMessageAssembler: Sendable {
    /// A frame as it came off the wire, already unmasked by the decoder if it was masked.
    public struct Frame: Sendable {
        public var fin: Bool
        public var reservedBits: UInt8
        public var opcode: UInt8
        public var isMasked: Bool
        public var payload: [UInt8]

        public init(fin: Bool, reservedBits: UInt8 = 0, opcode: UInt8, isMasked: Bool = false, payload: [UInt8]) {
            self.fin = fin
            self.reservedBits = reservedBits
            self.opcode = opcode
            self.isMasked = isMasked
            self.payload = payload
        }
    }

    /// What a frame amounts to.
    public enum Event: Sendable, Equatable {
        /// A part of a message arrived; nothing to deliver yet.
        case none
        /// A whole text message.
        case text(String)
        /// A whole binary message.
        case binary([UInt8])
        /// A ping, to be answered with a pong carrying the same bytes.
        case ping([UInt8])
        /// A pong.
        case pong([UInt8])
        /// The server closes: its code (`nil` when the frame had none) and reason.
        case close(code: UInt16?, reason: String)
        /// The server broke the protocol: close with `closeCode`, and fail with `reason`.
        case violation(closeCode: UInt16, reason: String)
    }

    /// RFC 6455's opcodes.
    public enum Opcode {
        public static let continuation: UInt8 = 0x0
        public static let text: UInt8 = 0x1
        public static let binary: UInt8 = 0x2
        public static let close: UInt8 = 0x8
        public static let ping: UInt8 = 0x9
        public static let pong: UInt8 = 0xA
    }

    /// Close codes.
    public enum CloseCode {
        public static let protocolError: UInt16 = 1002
        /// The code a close frame without one counts as (RFC 6455 §7.1.5); never sent.
        public static let noStatusReceived: UInt16 = 1005
        public static let invalidPayload: UInt16 = 1007
        public static let messageTooBig: UInt16 = 1009
    }

    /// The largest message accepted, in bytes.
    public var maximumMessageSize: Int
    /// The fragmented message being assembled: its opcode and bytes so far.
    private var partial: (opcode: UInt8, bytes: [UInt8])?

    public init(maximumMessageSize: Int) {
        self.maximumMessageSize = maximumMessageSize
    }

    /// Takes the next frame.
    public mutating func receive(_ frame: Frame) -> Event {
        if frame.isMasked {
            return .violation(closeCode: CloseCode.protocolError, reason: "the server sent a masked frame")
        }
        if frame.reservedBits != 0 {
            return .violation(closeCode: CloseCode.protocolError, reason: "the server set reserved bits")
        }
        switch frame.opcode {
        case Opcode.close, Opcode.ping, Opcode.pong:
            return control(frame)
        case Opcode.text, Opcode.binary:
            guard partial == nil else {
                return .violation(
                    closeCode: CloseCode.protocolError, reason: "a new message began inside a fragmented one")
            }
            guard frame.payload.count <= maximumMessageSize else { return tooBig() }
            if frame.fin { return message(opcode: frame.opcode, bytes: frame.payload) }
            partial = (frame.opcode, frame.payload)
            return .none
        case Opcode.continuation:
            guard var current = partial else {
                return .violation(
                    closeCode: CloseCode.protocolError, reason: "a continuation frame came outside a message")
            }
            guard current.bytes.count + frame.payload.count <= maximumMessageSize else {
                partial = nil
                return tooBig()
            }
            partial = nil  // while `current` is changed, so its bytes are not copied
            current.bytes += frame.payload
            if frame.fin { return message(opcode: current.opcode, bytes: current.bytes) }
            partial = current
            return .none
        default:
            return .violation(
                closeCode: CloseCode.protocolError, reason: "the server used the reserved opcode \(frame.opcode)")
        }
    }

    private func control(_ frame: Frame) -> Event {
        guard frame.fin, frame.payload.count <= 125 else {
            return .violation(
                closeCode: CloseCode.protocolError, reason: "the server sent a fragmented or oversized control frame")
        }
        switch frame.opcode {
        case Opcode.ping: return .ping(frame.payload)
        case Opcode.pong: return .pong(frame.payload)
        default: return close(frame.payload)
        }
    }

    private func close(_ payload: [UInt8]) -> Event {
        if payload.isEmpty { return .close(code: nil, reason: "") }
        guard payload.count >= 2 else {
            return .violation(closeCode: CloseCode.protocolError, reason: "the server's close frame is one byte long")
        }
        let code = UInt16(payload[0]) << 8 | UInt16(payload[1])
        guard Self.mayAppearOnTheWire(code) else {
            return .violation(
                closeCode: CloseCode.protocolError, reason: "the server closed with the invalid code \(code)")
        }
        guard let reason = String(validating: payload[2...], as: UTF8.self) else {
            return .violation(closeCode: CloseCode.invalidPayload, reason: "the server's close reason is not UTF-8")
        }
        return .close(code: code, reason: reason)
    }

    /// RFC 6455 §7.4: 1000–1003, 1007–1011 (and 1012–1014, registered since) and 3000–4999; never 1004–1006 or 1015,
    /// which only report what happened locally.
    public static func mayAppearOnTheWire(_ code: UInt16) -> Bool {
        switch code {
        case 1000...1003, 1007...1014, 3000...4999: return true
        default: return false
        }
    }

    private func message(opcode: UInt8, bytes: [UInt8]) -> Event {
        guard opcode == Opcode.text else { return .binary(bytes) }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            return .violation(
                closeCode: CloseCode.invalidPayload, reason: "the server sent a text message that is not UTF-8")
        }
        return .text(text)
    }

    private func tooBig() -> Event {
        .violation(
            closeCode: CloseCode.messageTooBig,
            reason: "the server sent a message larger than the maximum of \(maximumMessageSize) bytes")
    }
}
