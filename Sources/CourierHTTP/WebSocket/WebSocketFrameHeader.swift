/// The rules for a frame's header that a WebSocket client checks before it reads the frame's payload (RFC 6455 §5.2,
/// §5.5): a 64-bit payload length's most significant bit "MUST be 0", and control frames "MUST have a payload length
/// of 125 bytes or less and MUST NOT be fragmented". A header that breaks them is a protocol error (1002), found before
/// the frame's length is held against the largest message (1009): a broken frame is not a message that is too big.
///
/// Pure: a frame's first bytes in, a verdict out.
public enum WebSocketFrameHeader {
    /// What a frame's first bytes say.
    public enum Verdict: Sendable, Equatable {
        /// The bytes do not show the whole length yet: `needed` bytes do.
        case incomplete(needed: Int)
        /// The header breaks none of these rules.
        case valid
        /// The header breaks the protocol: close with `closeCode` and fail with `reason`.
        case violation(closeCode: UInt16, reason: String)
    }

    /// Checks the frame that `bytes` begins: its first byte is `bytes[0]`; only the first ten bytes (the first two
    /// and the 64-bit length) are looked at.
    public static func check(_ bytes: [UInt8]) -> Verdict {
        guard bytes.count >= 2 else { return .incomplete(needed: 2) }
        let fin = bytes[0] & 0x80 != 0
        let isControl = bytes[0] & 0x08 != 0
        let shortLength = bytes[1] & 0x7F
        if isControl {
            guard fin, shortLength <= 125 else {
                return .violation(
                    closeCode: WebSocketMessageAssembler.CloseCode.protocolError,
                    reason: "the server sent a fragmented or oversized control frame")
            }
            return .valid
        }
        guard shortLength == 127 else { return .valid }
        guard bytes.count >= 10 else { return .incomplete(needed: 10) }
        guard bytes[2] & 0x80 == 0 else {
            return .violation(
                closeCode: WebSocketMessageAssembler.CloseCode.protocolError,
                reason: "the server sent a 64-bit frame length with its most significant bit set")
        }
        return .valid
    }
}
