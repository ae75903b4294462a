#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where an HTTP/1.1 response's body is in the bytes that follow its head (RFC 9112 §6.3, §7.1): which bytes are the
/// body's content, where the body ends, and whether its chunked framing is well formed.
///
/// The transport's HTTP/1.1 codec feeds each read through this: bytes after the body's end are seen for what they are
/// (a server that sends more than its response cannot be trusted with the connection), and a chunked body reaches the
/// app without its framing. A value type, stepped by the codec on the connection's event loop.
public struct ResponseBodyFraming: Hashable, Sendable {
    private enum State: Hashable, Sendable {
        /// `Content-Length` bytes left (0 for a response that has no body).
        case length(remaining: Int64)
        /// In a chunk-size line: the size so far and its digit count, whether an extension began, whether its CR came.
        case chunkSize(size: Int64, digits: Int, extensionLength: Int?, sawCR: Bool)
        /// Whitespace after a chunk size (RFC 9112 §7.1.1's `BWS`): only more of it, a `;` that starts an
        /// extension, or the line's end may follow (`5 6` is not a size of 5); how many bytes of it came.
        case chunkSizeSpace(size: Int64, length: Int)
        case chunkData(remaining: Int64)
        /// After a chunk's data: its CRLF (whether the CR came).
        case chunkDataEnd(sawCR: Bool)
        /// After the last chunk: trailer lines until an empty one (the current line's length, whether its CR came,
        /// and the trailer section's length so far).
        case trailers(lineLength: Int, sawCR: Bool, total: Int)
        /// The body ends when the connection closes (or the connection was taken over: 101, a CONNECT tunnel).
        case untilClose
        case complete
    }

    private var state: State

    /// The framing of the response whose strict head is `head` (every line ended by CRLF, as the codec passes
    /// heads on, and the blank line included), to a request with `requestMethod`.
    public init(head: UnsafeRawBufferPointer, requestMethod: String) {
        var status = 0
        var contentLength: Int64?
        var transferCodingIsChunked: Bool?
        var lineStart = 0
        var lineNumber = 0
        // Line by line with memchr: every response's head passes here (see ResponseHeadSyntax).
        while let base = head.baseAddress, lineStart < head.count,
            let found = memchr(base + lineStart, Int32(UInt8(ascii: "\n")), head.count - lineStart)
        {
            let lineFeed = base.distance(to: UnsafeRawPointer(found))
            let line = head[lineStart..<max(lineStart, lineFeed - 1)]
            lineStart = lineFeed + 1
            if line.isEmpty { break }
            defer { lineNumber += 1 }
            if lineNumber == 0 {
                status = Self.statusCode(line)
            } else if let value = Self.value(of: Self.contentLength, in: line) {
                contentLength = Self.decimal(value)
            } else if let value = Self.value(of: Self.transferEncoding, in: line) {
                let codings = TransferCodingRules.codings(String(decoding: value, as: UTF8.self))
                transferCodingIsChunked = codings.last == "chunked"
            }
        }
        // Methods are case-sensitive (RFC 9110 §9.1): compared as sent.
        if requestMethod == "HEAD" || status == 204 || status == 304 || (100..<200).contains(status) && status != 101 {
            state = .length(remaining: 0)
        } else if status == 101 || (requestMethod == "CONNECT" && (200..<300).contains(status)) {
            state = .untilClose
        } else if let chunked = transferCodingIsChunked {
            state = chunked ? .chunkSize(size: 0, digits: 0, extensionLength: nil, sawCR: false) : .untilClose
        } else if let contentLength {
            state = .length(remaining: contentLength)
        } else {
            state = .untilClose
        }
    }

    /// Whether a response's body ends only where the connection closes (RFC 9112 §6.3): one that may have a body
    /// (not to HEAD, nor 1xx, 204 or 304) framed neither by chunks nor by `Content-Length`, as
    /// ``init(head:requestMethod:)`` decides from the raw head. Over TLS such a body is complete only when the close
    /// comes with `close_notify` (RFC 9112 §9.8): a bare TCP close may be an attacker's, cutting the body short.
    ///
    /// - Parameters:
    ///   - transferEncoding: The response's `Transfer-Encoding` values, one per field line.
    ///   - hasContentLength: Whether the response has a `Content-Length` field.
    public static func endsAtClose(
        status: Int, requestMethod: String, transferEncoding: [String], hasContentLength: Bool
    ) -> Bool {
        if requestMethod == "HEAD" || status == 204 || status == 304 || (100..<200).contains(status) && status != 101 {
            return false
        }
        if status == 101 || (requestMethod == "CONNECT" && (200..<300).contains(status)) { return true }
        if let last = transferEncoding.last {
            return TransferCodingRules.codings(last).last != "chunked"
        }
        return !hasContentLength
    }

    /// Whether the body ends only where the connection closes.
    public var endsAtClose: Bool { state == .untilClose }

    /// Whether the body has ended.
    public var isComplete: Bool { state == .complete || state == .length(remaining: 0) }

    /// The longest chunk extension, and the longest trailer section, accepted: the framing keeps no bytes, but a
    /// server must not keep a response going for ever without sending any of its content.
    public static let maximumFramingLineLength = 1 << 20

    /// Feeds the next bytes of the body: `content` is called with the range of each run of the body's content in
    /// them (a chunked body's framing left out). Returns how many of the bytes belong to the body when it ends within
    /// them (the rest came after the response), or `nil` when all of them do.
    ///
    /// - Throws: `badServerResponse` for a malformed chunked framing (a chunk size that is not hex or too large, a
    ///   chunk not followed by CRLF, a line ended by a bare LF or CR, a control character in an extension, an endless
    ///   extension or trailer section). The body cannot be trusted after it.
    public mutating func decode(
        _ bytes: UnsafeRawBufferPointer, content: (Range<Int>) -> Void
    ) throws(TransferError) -> Int? {
        var index = 0
        while true {
            switch state {
            case .complete:
                return index
            case .untilClose:
                if index < bytes.count { content(index..<bytes.count) }
                return nil
            case .length(let remaining):
                if remaining == 0 {
                    state = .complete
                    return index
                }
                let taken = Int(min(remaining, Int64(bytes.count - index)))
                if taken > 0 { content(index..<(index + taken)) }
                index += taken
                state = .length(remaining: remaining - Int64(taken))
                if remaining - Int64(taken) > 0 { return nil }
            case .chunkData(let remaining):
                let taken = Int(min(remaining, Int64(bytes.count - index)))
                if taken > 0 { content(index..<(index + taken)) }
                index += taken
                if remaining - Int64(taken) > 0 {
                    state = .chunkData(remaining: remaining - Int64(taken))
                    return nil
                }
                state = .chunkDataEnd(sawCR: false)
            default:
                guard index < bytes.count else { return nil }
                try step(bytes[index])
                index += 1
            }
        }
    }

    /// Feeds the next bytes of the body without looking at its content (see ``decode(_:content:)``).
    public mutating func consume(_ bytes: UnsafeRawBufferPointer) throws(TransferError) -> Int? {
        try decode(bytes) { _ in }
    }

    /// One byte of a chunk-size line, a chunk's CRLF or a trailer line (RFC 9112 §7.1).
    private mutating func step(_ byte: UInt8) throws(TransferError) {
        let cr = UInt8(ascii: "\r")
        let lf = UInt8(ascii: "\n")
        switch state {
        case .chunkSize(let size, let digits, let extensionLength, let sawCR):
            if sawCR {
                guard byte == lf else { throw Self.malformed("a chunk-size line's CR is not followed by LF") }
                guard digits > 0 else { throw Self.malformed("a chunk-size line has no size") }
                state = size == 0 ? .trailers(lineLength: 0, sawCR: false, total: 0) : .chunkData(remaining: size)
            } else if byte == cr {
                state = .chunkSize(size: size, digits: digits, extensionLength: extensionLength, sawCR: true)
            } else if let length = extensionLength {
                // The extension's syntax is not checked (nobody reads it), but no control character may hide in it.
                guard !FieldList.isControl(byte) else {
                    throw Self.malformed("a chunk extension has a control character")
                }
                guard length < Self.maximumFramingLineLength else {
                    throw Self.malformed("a chunk extension is endless")
                }
                state = .chunkSize(size: size, digits: digits, extensionLength: length + 1, sawCR: false)
            } else if let digit = Self.hexValue(byte) {
                guard size <= Int64.max >> 4 else { throw Self.malformed("a chunk size is too large") }
                state = .chunkSize(
                    size: size << 4 | Int64(digit), digits: digits + 1, extensionLength: nil, sawCR: false)
            } else if digits > 0, byte == UInt8(ascii: ";") {
                state = .chunkSize(size: size, digits: digits, extensionLength: 0, sawCR: false)
            } else if digits > 0, byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") {
                state = .chunkSizeSpace(size: size, length: 1)
            } else {
                throw Self.malformed("a chunk size is not hexadecimal")
            }
        case .chunkSizeSpace(let size, let length):
            if byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") {
                guard length < Self.maximumFramingLineLength else {
                    throw Self.malformed("a chunk-size line is endless")
                }
                state = .chunkSizeSpace(size: size, length: length + 1)
            } else if byte == UInt8(ascii: ";") || byte == cr {
                // As after the digits: an extension begins, or the line ends.
                state = .chunkSize(size: size, digits: 1, extensionLength: length + 1, sawCR: byte == cr)
            } else {
                throw Self.malformed("a chunk size is followed by something other than an extension")
            }
        case .chunkDataEnd(let sawCR):
            if !sawCR, byte == cr {
                state = .chunkDataEnd(sawCR: true)
            } else if sawCR, byte == lf {
                state = .chunkSize(size: 0, digits: 0, extensionLength: nil, sawCR: false)
            } else {
                throw Self.malformed("a chunk's data is not followed by CRLF")
            }
        case .trailers(let lineLength, let sawCR, let total):
            if sawCR {
                guard byte == lf else { throw Self.malformed("a trailer line's CR is not followed by LF") }
                state = lineLength == 0 ? .complete : .trailers(lineLength: 0, sawCR: false, total: total)
            } else if byte == cr {
                state = .trailers(lineLength: lineLength, sawCR: true, total: total)
            } else {
                guard !FieldList.isControl(byte) else {
                    throw Self.malformed("a trailer line has a control character")
                }
                guard total < Self.maximumFramingLineLength else { throw Self.malformed("the trailers are endless") }
                state = .trailers(lineLength: lineLength + 1, sawCR: false, total: total + 1)
            }
        default:
            break
        }
    }

    private static func malformed(_ detail: String) -> TransferError {
        .badServerResponse("the response's chunked body is malformed: \(detail)")
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// The status code of a status line (`HTTP/1.1 200 …`, checked by the codec), 0 when it is too short.
    private static func statusCode(_ line: Slice<UnsafeRawBufferPointer>) -> Int {
        guard line.count >= 12 else { return 0 }
        return line[(line.startIndex + 9)...(line.startIndex + 11)].reduce(0) { $0 * 10 + Int($1) - 48 }
    }

    private static let contentLength = Array("content-length".utf8)
    private static let transferEncoding = Array("transfer-encoding".utf8)

    /// The value of a header line named `nameBytes` (lowercase), compared case-insensitively.
    private static func value(
        of nameBytes: [UInt8], in line: Slice<UnsafeRawBufferPointer>
    ) -> Slice<UnsafeRawBufferPointer>? {
        guard line.count > nameBytes.count, line[line.startIndex + nameBytes.count] == UInt8(ascii: ":") else {
            return nil
        }
        for (offset, expected) in nameBytes.enumerated() {
            let byte = line[line.startIndex + offset]
            if (byte >= 0x41 && byte <= 0x5A ? byte + 0x20 : byte) != expected { return nil }
        }
        return line[(line.startIndex + nameBytes.count + 1)...]
    }

    /// A field value that is one decimal number between optional whitespace, or `nil` (the codec passes on
    /// only heads whose `Content-Length` is such a value).
    private static func decimal(_ value: Slice<UnsafeRawBufferPointer>) -> Int64? {
        let isWhitespace = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        let digits = value.drop(while: isWhitespace).reversed().drop(while: isWhitespace)
        guard !digits.isEmpty, digits.count <= 18 else { return nil }
        var number: Int64 = 0
        for byte in digits.reversed() {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            number = number * 10 + Int64(byte - UInt8(ascii: "0"))
        }
        return number
    }
}
