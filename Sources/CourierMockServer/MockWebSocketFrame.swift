import NIOCore

/// Builders for raw WebSocket frames (RFC 6455 §5.2), valid or deliberately broken, to hand to
/// ``MockWebSocketStep/sendRaw(_:)``.
///
/// ```swift
/// // A masked text frame, which a client must refuse from a server (close 1002).
/// let frame = MockWebSocketFrame.bytes(opcode: MockWebSocketFrame.Opcode.text, masked: true, payload: Array("hi".utf8))
/// ```
public enum MockWebSocketFrame {
    /// Opcodes (RFC 6455 §5.2, §11.8); any other 4-bit value is reserved.
    public enum Opcode {
        /// A continuation frame of a fragmented message.
        public static let continuation: UInt8 = 0x0
        /// A text frame (UTF-8).
        public static let text: UInt8 = 0x1
        /// A binary frame.
        public static let binary: UInt8 = 0x2
        /// A close frame (control).
        public static let close: UInt8 = 0x8
        /// A ping (control).
        public static let ping: UInt8 = 0x9
        /// A pong (control).
        public static let pong: UInt8 = 0xA
    }

    /// The masking key used by ``bytes(opcode:fin:rsv:masked:payload:declaredLength:)`` when `masked` is set: the one
    /// of RFC 6455's own examples (§5.7).
    public static let maskingKey: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]

    /// One frame: the header (2 to 14 bytes) followed by `payload`, masked with ``maskingKey`` when `masked` is set.
    ///
    /// - Parameters:
    ///   - opcode: The opcode, e.g. ``Opcode/text``; only its low 4 bits are used, so reserved opcodes can be sent.
    ///   - fin: The FIN bit: whether this is the last frame of its message.
    ///   - rsv: The RSV1, RSV2 and RSV3 bits, as the low 3 bits of this value (RSV1 is `0b100`).
    ///   - masked: Whether to set the MASK bit and mask the payload (what a client does; a server must not).
    ///   - payload: The payload, unmasked.
    ///   - declaredLength: The payload length to write in the header instead of `payload.count`, for frames that lie
    ///     about their length.
    /// - Returns: The frame's bytes, exactly as they go on the wire.
    public static func bytes(
        opcode: UInt8,
        fin: Bool = true,
        rsv: UInt8 = 0,
        masked: Bool = false,
        payload: [UInt8],
        declaredLength: Int? = nil
    ) -> [UInt8] {
        var buffer = ByteBufferAllocator().buffer(capacity: payload.count + 14)
        buffer.writeWebSocketFrameHeader(
            opcode: opcode,
            fin: fin,
            rsv: rsv,
            maskingKey: masked ? maskingKey : nil,
            length: declaredLength ?? payload.count
        )
        var body = ByteBuffer(bytes: payload)
        if masked {
            body.applyWebSocketMask(maskingKey)
        }
        buffer.writeBuffer(&body)
        return Array(buffer.readableBytesView)
    }

    /// The payload of a close frame: the status code in network byte order, then `reason` as UTF-8 (RFC 6455 §5.5.1).
    ///
    /// - Parameters:
    ///   - code: The status code; any value, so invalid codes such as 1005 or 999 can be sent too.
    ///   - reason: The reason.
    public static func closePayload(code: UInt16, reason: String = "") -> [UInt8] {
        [UInt8(code >> 8), UInt8(code & 0xFF)] + Array(reason.utf8)
    }
}

extension ByteBuffer {
    /// Writes a WebSocket frame header: FIN, RSV and opcode, the MASK bit and the shortest length encoding for
    /// `length`, then the masking key if there is one.
    mutating func writeWebSocketFrameHeader(opcode: UInt8, fin: Bool, rsv: UInt8, maskingKey: [UInt8]?, length: Int) {
        writeInteger((fin ? 0x80 : 0) | (rsv & 0x7) << 4 | opcode & 0xF, as: UInt8.self)
        let maskBit: UInt8 = maskingKey == nil ? 0 : 0x80
        switch length {
        case ..<126:
            writeInteger(maskBit | UInt8(length), as: UInt8.self)
        case ..<65536:
            writeInteger(maskBit | 126, as: UInt8.self)
            writeInteger(UInt16(length), as: UInt16.self)
        default:
            writeInteger(maskBit | 127, as: UInt8.self)
            writeInteger(UInt64(length), as: UInt64.self)
        }
        if let maskingKey {
            writeBytes(maskingKey)
        }
    }

    /// XORs the readable bytes with the 4-byte `maskingKey`, repeated, starting at the key's first byte (RFC 6455 §5.3);
    /// masking and unmasking are the same operation. Eight bytes at a time, so 16 MiB messages stay quick even in debug
    /// builds.
    mutating func applyWebSocketMask(_ maskingKey: [UInt8]) {
        precondition(maskingKey.count == 4, "a WebSocket masking key has 4 bytes")
        withUnsafeMutableReadableBytes { bytes in
            var wideKey: UInt64 = 0
            withUnsafeMutableBytes(of: &wideKey) { key in
                for index in 0..<8 { key[index] = maskingKey[index % 4] }
            }
            let wholeWords = bytes.count / 8
            for word in 0..<wholeWords {
                let offset = word * 8
                let value = bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                bytes.storeBytes(of: value ^ wideKey, toByteOffset: offset, as: UInt64.self)
            }
            for index in (wholeWords * 8)..<bytes.count {
                bytes[index] ^= maskingKey[index % 4]
            }
        }
    }
}
