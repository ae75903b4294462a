/// Builders for raw HTTP/2 frames (RFC 9113 §4.1), valid or deliberately broken, to hand to
/// ``HTTP2Misbehaviour/rawFrames(_:thenRespond:)``.
///
/// ```swift
/// // A DATA frame on stream 0, which a client must treat as a connection error.
/// let frame = HTTP2RawFrame.frame(type: HTTP2RawFrame.FrameType.data, streamID: 0, payload: [1, 2, 3])
/// ```
public enum HTTP2RawFrame {
    /// Frame type codes (RFC 9113 §6).
    public enum FrameType {
        /// `DATA` (§6.1).
        public static let data: UInt8 = 0x0
        /// `HEADERS` (§6.2).
        public static let headers: UInt8 = 0x1
        /// `PRIORITY` (§6.3, deprecated by RFC 9113 but still parsed).
        public static let priority: UInt8 = 0x2
        /// `RST_STREAM` (§6.4).
        public static let rstStream: UInt8 = 0x3
        /// `SETTINGS` (§6.5).
        public static let settings: UInt8 = 0x4
        /// `PUSH_PROMISE` (§6.6).
        public static let pushPromise: UInt8 = 0x5
        /// `PING` (§6.7).
        public static let ping: UInt8 = 0x6
        /// `GOAWAY` (§6.8).
        public static let goAway: UInt8 = 0x7
        /// `WINDOW_UPDATE` (§6.9).
        public static let windowUpdate: UInt8 = 0x8
        /// `CONTINUATION` (§6.10).
        public static let continuation: UInt8 = 0x9
    }

    /// Frame flags (RFC 9113 §6); combine them with `|`.
    public enum Flag {
        /// `END_STREAM` (DATA, HEADERS).
        public static let endStream: UInt8 = 0x1
        /// `ACK` (SETTINGS, PING).
        public static let ack: UInt8 = 0x1
        /// `END_HEADERS` (HEADERS, PUSH_PROMISE, CONTINUATION).
        public static let endHeaders: UInt8 = 0x4
        /// `PADDED` (DATA, HEADERS, PUSH_PROMISE).
        public static let padded: UInt8 = 0x8
        /// `PRIORITY` (HEADERS).
        public static let priority: UInt8 = 0x20
    }

    /// Setting identifiers (RFC 9113 §6.5.2).
    public enum SettingIdentifier {
        /// `SETTINGS_HEADER_TABLE_SIZE`.
        public static let headerTableSize: UInt16 = 0x1
        /// `SETTINGS_ENABLE_PUSH`.
        public static let enablePush: UInt16 = 0x2
        /// `SETTINGS_MAX_CONCURRENT_STREAMS`.
        public static let maxConcurrentStreams: UInt16 = 0x3
        /// `SETTINGS_INITIAL_WINDOW_SIZE`.
        public static let initialWindowSize: UInt16 = 0x4
        /// `SETTINGS_MAX_FRAME_SIZE`.
        public static let maxFrameSize: UInt16 = 0x5
        /// `SETTINGS_MAX_HEADER_LIST_SIZE`.
        public static let maxHeaderListSize: UInt16 = 0x6
    }

    /// One frame: the 9-byte frame header followed by `payload`.
    ///
    /// - Parameters:
    ///   - type: The frame type, e.g. ``FrameType/data``; any value, so unknown types can be sent too.
    ///   - flags: The flags, e.g. `Flag.endHeaders | Flag.endStream`.
    ///   - streamID: The stream identifier (31 bits; the reserved bit is sent as 0).
    ///   - payload: The payload.
    ///   - declaredLength: The length to put in the header instead of `payload.count` (24 bits), for frames that lie
    ///     about their length.
    public static func frame(
        type: UInt8,
        flags: UInt8 = 0,
        streamID: Int,
        payload: [UInt8],
        declaredLength: Int? = nil
    ) -> [UInt8] {
        let length = UInt32(truncatingIfNeeded: declaredLength ?? payload.count) & 0xFF_FFFF
        let stream = UInt32(truncatingIfNeeded: streamID) & 0x7FFF_FFFF
        return [UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF), type, flags]
            + bigEndian(stream) + payload
    }

    /// A HEADERS frame with `fields` encoded by ``headerBlock(_:)``, flagged `END_HEADERS` and, if `endStream`,
    /// `END_STREAM`.
    public static func headers(streamID: Int, fields: [(name: String, value: String)], endStream: Bool = false)
        -> [UInt8]
    {
        let flags = Flag.endHeaders | (endStream ? Flag.endStream : 0)
        return frame(type: FrameType.headers, flags: flags, streamID: streamID, payload: headerBlock(fields))
    }

    /// A PUSH_PROMISE frame on `streamID` promising `promisedStreamID`, with `fields` as its header block
    /// (`END_HEADERS`).
    public static func pushPromise(
        streamID: Int,
        promisedStreamID: Int,
        fields: [(name: String, value: String)]
    ) -> [UInt8] {
        let promised = bigEndian(UInt32(truncatingIfNeeded: promisedStreamID) & 0x7FFF_FFFF)
        return frame(
            type: FrameType.pushPromise,
            flags: Flag.endHeaders,
            streamID: streamID,
            payload: promised + headerBlock(fields)
        )
    }

    /// A SETTINGS frame (stream 0) with these identifier–value pairs, e.g.
    /// `settings([(SettingIdentifier.initialWindowSize, 0x8000_0000)])`, an initial window size beyond the maximum.
    public static func settings(_ settings: [(identifier: UInt16, value: UInt32)]) -> [UInt8] {
        var payload: [UInt8] = []
        for setting in settings {
            payload += [UInt8(setting.identifier >> 8), UInt8(setting.identifier & 0xFF)] + bigEndian(setting.value)
        }
        return frame(type: FrameType.settings, streamID: 0, payload: payload)
    }

    /// An HPACK header block (RFC 7541) that sends every field as a literal without indexing and without Huffman
    /// coding, so it never touches either side's dynamic table. Names are sent as given: HTTP/2 wants them
    /// lowercase, and pseudo-header fields (`:status`) go first.
    public static func headerBlock(_ fields: [(name: String, value: String)]) -> [UInt8] {
        var block: [UInt8] = []
        for field in fields {
            // 0x00: literal header field without indexing, with a literal (not indexed) name.
            block.append(0x00)
            block += stringLiteral(Array(field.name.utf8))
            block += stringLiteral(Array(field.value.utf8))
        }
        return block
    }

    /// An HPACK string literal: the length as a 7-bit-prefix integer (Huffman bit clear), then the bytes.
    private static func stringLiteral(_ bytes: [UInt8]) -> [UInt8] {
        prefixedInteger(bytes.count, prefixBits: 7) + bytes
    }

    /// An HPACK integer (RFC 7541 §5.1) in an `prefixBits`-bit prefix, the bits above the prefix left 0.
    private static func prefixedInteger(_ value: Int, prefixBits: Int) -> [UInt8] {
        let limit = (1 << prefixBits) - 1
        guard value >= limit else { return [UInt8(value)] }
        var encoded = [UInt8(limit)]
        var rest = value - limit
        while rest >= 128 {
            encoded.append(UInt8(rest % 128 + 128))
            rest /= 128
        }
        encoded.append(UInt8(rest))
        return encoded
    }

    private static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24 & 0xFF), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }
}
