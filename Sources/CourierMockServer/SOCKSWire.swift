import NIOCore

/// The SOCKS5 messages a client sends (RFC 1928, and RFC 1929 for the credentials), read from bytes that may
/// arrive split anywhere, and the replies a ``MockSOCKSProxy`` sends.
///
/// Every reader consumes a message only once all of it is in the buffer, so a caller can append what arrives and
/// call again. No message is longer than 513 bytes (a credentials message: 3 + 255 + 255), since every variable
/// part is preceded by a one-byte length.
enum SOCKSWire {
    /// The outcome of a read.
    enum Outcome<Message> {
        /// The buffer does not hold the whole message yet; nothing was consumed.
        case incomplete
        case complete(Message)
        /// The bytes are not this message (a wrong version number); the connection cannot go on.
        case malformed
    }

    /// The destination of a request, as sent.
    enum Address: Equatable {
        case ipv4([UInt8])
        case ipv6([UInt8])
        case domain([UInt8])
        /// An address type this proxy does not know; the rest of the request cannot be delimited.
        case unsupported(UInt8)
    }

    struct Request: Equatable {
        var command: UInt8
        var address: Address
        var port: Int
    }

    static let version: UInt8 = 0x05
    static let credentialsVersion: UInt8 = 0x01
    static let connectCommand: UInt8 = 0x01

    /// `VER NMETHODS METHODS…`; returns the methods offered.
    static func readGreeting(from buffer: inout ByteBuffer) -> Outcome<[UInt8]> {
        var peek = buffer
        guard let version = peek.readInteger(as: UInt8.self), let count = peek.readInteger(as: UInt8.self) else {
            return .incomplete
        }
        guard version == Self.version else { return .malformed }
        guard let methods = peek.readBytes(length: Int(count)) else { return .incomplete }
        buffer = peek
        return .complete(methods)
    }

    /// `VER ULEN UNAME PLEN PASSWD` (RFC 1929).
    static func readCredentials(from buffer: inout ByteBuffer) -> Outcome<(user: [UInt8], password: [UInt8])> {
        var peek = buffer
        guard let version = peek.readInteger(as: UInt8.self) else { return .incomplete }
        guard version == credentialsVersion else { return .malformed }
        guard let user = readLengthPrefixed(&peek), let password = readLengthPrefixed(&peek) else {
            return .incomplete
        }
        buffer = peek
        return .complete((user: user, password: password))
    }

    /// `VER CMD RSV ATYP DST.ADDR DST.PORT`. An unknown address type completes the request after its first four
    /// bytes (with port 0): the proxy answers it and closes, as it cannot tell where the address ends.
    static func readRequest(from buffer: inout ByteBuffer) -> Outcome<Request> {
        var peek = buffer
        guard let version = peek.readInteger(as: UInt8.self) else { return .incomplete }
        guard version == Self.version else { return .malformed }
        // The reserved byte carries no meaning, so it is not checked.
        guard let command = peek.readInteger(as: UInt8.self), peek.readInteger(as: UInt8.self) != nil,
            let addressType = peek.readInteger(as: UInt8.self)
        else { return .incomplete }
        let address: Address
        switch addressType {
        case 0x01:
            guard let bytes = peek.readBytes(length: 4) else { return .incomplete }
            address = .ipv4(bytes)
        case 0x03:
            guard let bytes = readLengthPrefixed(&peek) else { return .incomplete }
            address = .domain(bytes)
        case 0x04:
            guard let bytes = peek.readBytes(length: 16) else { return .incomplete }
            address = .ipv6(bytes)
        default:
            buffer = peek
            return .complete(Request(command: command, address: .unsupported(addressType), port: 0))
        }
        guard let port = peek.readInteger(endianness: .big, as: UInt16.self) else { return .incomplete }
        buffer = peek
        return .complete(Request(command: command, address: address, port: Int(port)))
    }

    /// A reply to a request: `VER REP RSV ATYP BND.ADDR BND.PORT`, always with an IPv4 bound address (clients of
    /// a `CONNECT` have no use for it, and a fixed length keeps their parsing simple). `bound` is the proxy's end
    /// of the connection to the target; an IPv6 or missing one is sent as `0.0.0.0:0`.
    static func reply(_ code: UInt8, bound: SocketAddress? = nil) -> [UInt8] {
        var address: [UInt8] = [0, 0, 0, 0]
        var port = 0
        if let bound, case .v4 = bound, let text = bound.ipAddress {
            let octets = text.split(separator: ".").compactMap { UInt8($0) }
            if octets.count == 4 {
                address = octets
                port = bound.port ?? 0
            }
        }
        return [version, code, 0x00, 0x01] + address + [UInt8(truncatingIfNeeded: port >> 8), UInt8(port & 0xFF)]
    }

    private static func readLengthPrefixed(_ buffer: inout ByteBuffer) -> [UInt8]? {
        guard let length = buffer.readInteger(as: UInt8.self) else { return nil }
        return buffer.readBytes(length: Int(length))
    }
}
