/// Whether an HTTP/1.x connection stays open after a response (RFC 9112 §9.3): the `close` and `keep-alive` options
/// of its `Connection` fields, and the version's default.
///
/// Reads the values in place: every HTTP/1.1 response passes here, and NIO's `HTTPHeaders.isKeepAlive` split each
/// value into a new array (four allocations per response).
public enum ConnectionPersistence: Sendable, Hashable {
    /// Neither option was given.
    case unstated
    case close
    case keepAlive

    /// The options so far, with those of one more `Connection` field value. Both options together mean `close`.
    public func adding(_ value: String) -> ConnectionPersistence {
        var result = self
        var rest = value.utf8[...]
        while !rest.isEmpty {
            var token = rest.prefix { $0 != UInt8(ascii: ",") }
            rest = rest.dropFirst(token.count + 1)
            while let first = token.first, Self.isWhitespace(first) { token = token.dropFirst() }
            while let last = token.last, Self.isWhitespace(last) { token = token.dropLast() }
            if Self.equalIgnoringCase(token, "close") {
                result = .close
            } else if Self.equalIgnoringCase(token, "keep-alive") {
                result = result == .unstated ? .keepAlive : .close
            }
        }
        return result
    }

    /// Whether the connection stays open: as the options say, else by default from HTTP/1.1 on.
    public func persists(versionMajor: Int, versionMinor: Int) -> Bool {
        switch self {
        case .close: false
        case .keepAlive: true
        case .unstated: versionMajor > 1 || (versionMajor == 1 && versionMinor >= 1)
        }
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t")
    }

    /// Whether `token` is `expected` (lowercase), ASCII case ignored.
    private static func equalIgnoringCase(_ token: Substring.UTF8View, _ expected: StaticString) -> Bool {
        guard token.count == expected.utf8CodeUnitCount else { return false }
        return expected.withUTF8Buffer { expected in
            zip(token, expected).allSatisfy { byte, wanted in
                (byte >= 0x41 && byte <= 0x5A ? byte + 0x20 : byte) == wanted
            }
        }
    }
}
