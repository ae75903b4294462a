import Foundation
import NIOCore
import NIOWebSocket

/// A reason to fail a WebSocket connection: the close code and reason the server sends (RFC 6455 §7.4.1).
struct WebSocketFailure: Error {
    var code: UInt16
    var reason: String

    static func protocolError(_ reason: String) -> WebSocketFailure {
        WebSocketFailure(code: 1002, reason: reason)
    }
}

/// A complete text or binary message: its opcode and unmasked payload.
struct WebSocketDataMessage {
    var opcode: UInt8
    var payload: ByteBuffer
}

/// What a client frame amounts to once checked and, for fragments, reassembled.
enum WebSocketInbound {
    case message(WebSocketDataMessage, RecordedWebSocketMessage)
    case ping(ByteBuffer)
    case pong(ByteBuffer)
    case close(code: UInt16?, reason: String)
}

/// Checks the frames a client sends against RFC 6455 as a server must (masked, no reserved bits or opcodes, no
/// continuation out of place, valid close payloads, UTF-8 text) and reassembles fragmented messages. Control frames
/// that are fragmented or longer than 125 bytes are refused earlier, by NIO's frame decoder.
struct WebSocketMessageAssembler {
    /// The largest message (and so frame) the server accepts; longer ones fail the connection with 1009.
    static let maximumMessageSize = 64 * 1024 * 1024

    /// The opcode and payload so far of a fragmented message, between its first frame and its last.
    private var partial: WebSocketDataMessage?

    /// Takes one frame; returns what it completes, or `nil` for a fragment that does not end its message.
    mutating func receive(_ frame: WebSocketFrame) throws(WebSocketFailure) -> WebSocketInbound? {
        guard let maskKey = frame.maskKey else {
            throw WebSocketFailure.protocolError("client frames must be masked")
        }
        guard !frame.rsv1, !frame.rsv2, !frame.rsv3 else {
            throw WebSocketFailure.protocolError("no extension was negotiated: reserved bits must be 0")
        }
        var payload = frame.data
        payload.applyWebSocketMask(Array(maskKey))
        let opcode = UInt8(webSocketOpcode: frame.opcode)

        switch opcode {
        case MockWebSocketFrame.Opcode.ping:
            return .ping(payload)
        case MockWebSocketFrame.Opcode.pong:
            return .pong(payload)
        case MockWebSocketFrame.Opcode.close:
            let close = try Self.closeFrame(payload)
            return .close(code: close.code, reason: close.reason)
        case MockWebSocketFrame.Opcode.text, MockWebSocketFrame.Opcode.binary:
            guard partial == nil else {
                throw WebSocketFailure.protocolError("a new message began before the fragmented one ended")
            }
            let message = WebSocketDataMessage(opcode: opcode, payload: payload)
            guard frame.fin else {
                partial = message
                return nil
            }
            return try Self.complete(message)
        case MockWebSocketFrame.Opcode.continuation:
            guard var message = partial else {
                throw WebSocketFailure.protocolError("a continuation frame without a message to continue")
            }
            guard message.payload.readableBytes + payload.readableBytes <= Self.maximumMessageSize else {
                throw WebSocketFailure(code: 1009, reason: "message over 64 MiB")
            }
            message.payload.writeBuffer(&payload)
            guard frame.fin else {
                partial = message
                return nil
            }
            partial = nil
            return try Self.complete(message)
        default:
            throw WebSocketFailure.protocolError("reserved opcode")
        }
    }

    private static func complete(_ message: WebSocketDataMessage) throws(WebSocketFailure) -> WebSocketInbound {
        guard message.opcode == MockWebSocketFrame.Opcode.text else {
            return .message(message, .data(Data(message.payload.readableBytesView)))
        }
        guard let text = validUTF8(message.payload) else {
            throw WebSocketFailure(code: 1007, reason: "text message is not UTF-8")
        }
        return .message(message, .text(text))
    }

    /// The code and reason of a close frame's payload (RFC 6455 §5.5.1, §7.4).
    private static func closeFrame(_ payload: ByteBuffer) throws(WebSocketFailure) -> (code: UInt16?, reason: String) {
        var payload = payload
        guard payload.readableBytes > 0 else {
            return (nil, "")
        }
        guard let code = payload.readInteger(as: UInt16.self) else {
            throw WebSocketFailure.protocolError("a close payload of one byte")
        }
        guard isValidCloseCode(code) else {
            throw WebSocketFailure.protocolError("invalid close code \(code)")
        }
        guard let reason = validUTF8(payload) else {
            throw WebSocketFailure(code: 1007, reason: "close reason is not UTF-8")
        }
        return (code, reason)
    }

    /// Whether `code` may be sent in a close frame: the defined codes (RFC 6455 §7.4.1; 1012-1014 as registered with
    /// IANA later) and the ranges for libraries and applications; never 1004, 1005, 1006 or 1015.
    static func isValidCloseCode(_ code: UInt16) -> Bool {
        switch code {
        case 1000...1003, 1007...1014, 3000...4999:
            return true
        default:
            return false
        }
    }

    /// The bytes as a string, or `nil` when they are not valid UTF-8 (never repaired, byte order marks kept).
    private static func validUTF8(_ bytes: ByteBuffer) -> String? {
        if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) {
            return String(validating: bytes.readableBytesView, as: UTF8.self)
        }
        return String(data: Data(bytes.readableBytesView), encoding: .utf8)
    }
}
