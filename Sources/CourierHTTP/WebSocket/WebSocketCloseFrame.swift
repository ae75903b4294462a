/// The close frame a client sends (RFC 6455 §5.5.1, §7.4): what goes on the wire for the code and reason an app asks
/// for with `cancel(with:reason:)`, or the handler uses to echo the server or to fail the connection.
public enum WebSocketCloseFrame {
    /// The most bytes of reason a close frame carries: a control frame's payload is at most 125 bytes (§5.5), two of
    /// them the code.
    public static let maximumReasonLength = 123

    /// The payload for `code` and `reason`: empty — a close without a status — when there is no code, or when the code
    /// may not appear on the wire (0, 1005, 1006, 1015 and the other codes outside
    /// ``WebSocketMessageAssembler/mayAppearOnTheWire(_:)``: §7.4.1 says 1005, 1006 and 1015 "MUST NOT be set as a
    /// status code in a Close control frame by an endpoint"); else the code, then the reason cut to
    /// ``maximumReasonLength`` bytes, before the UTF-8 character the limit falls in, so that a valid reason stays valid.
    public static func payload(code: UInt16?, reason: [UInt8]) -> [UInt8] {
        guard let code, WebSocketMessageAssembler.mayAppearOnTheWire(code) else { return [] }
        var cut = min(reason.count, maximumReasonLength)
        if cut < reason.count {
            // Back to the first byte of the character the limit falls in (continuation bytes are 0b10xxxxxx).
            while cut > 0, reason[cut] & 0xC0 == 0x80 { cut -= 1 }
        }
        return [UInt8(code >> 8), UInt8(code & 0xFF)] + Array(reason[..<cut])
    }
}
