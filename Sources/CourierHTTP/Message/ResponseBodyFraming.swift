#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where an HTTP/1.1 response's body ends in the bytes that follow its head (RFC 9112 §6.3), so that bytes a server
/// sends after its response are seen for what they are.
///
/// NIO's parser reads everything a connection delivers: bytes after a complete response that are only the start of a
/// head are kept inside it, silently, and prefix the next response on a reused connection (a forged head, a desync).
/// The transport's head normalizer feeds each read through this first and keeps the parser from seeing any byte after
/// the body's end.
///
/// It only finds the end; the parser still validates the syntax (a malformed chunk fails there, not here). A value
/// type, stepped by the normalizer on the connection's event loop.
public struct ResponseBodyFraming: Hashable, Sendable {
    private enum State: Hashable, Sendable {
        /// `Content-Length` bytes left (0 for a response that has no body).
        case length(remaining: Int64)
        /// In a chunk-size line (its size so far, and whether an extension or whitespace began).
        case chunkSize(size: Int64, inExtension: Bool)
        case chunkData(remaining: Int64)
        /// After a chunk's data: its CRLF.
        case chunkDataEnd
        /// After the last chunk: trailer lines until an empty one (whether the current line is empty so far).
        case trailers(lineIsEmpty: Bool)
        /// The body ends when the connection closes (or the connection was taken over: 101, a CONNECT tunnel).
        case untilClose
        case complete
    }

    private var state: State

    /// The framing of the response whose strict head is `head` (every line ended by CRLF, as the normalizer passes
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
            state = chunked ? .chunkSize(size: 0, inExtension: false) : .untilClose
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

    /// Whether the body has ended.
    public var isComplete: Bool { state == .complete || state == .length(remaining: 0) }

    /// Feeds the next bytes of the body; returns how many of them belong to it when it ends within them (the rest
    /// came after the response), or `nil` when all of them do.
    public mutating func consume(_ bytes: UnsafeRawBufferPointer) -> Int? {
        var index = 0
        while true {
            switch state {
            case .complete:
                return index
            case .untilClose:
                return nil
            case .length(let remaining):
                if remaining == 0 {
                    state = .complete
                    return index
                }
                let taken = Int(min(remaining, Int64(bytes.count - index)))
                index += taken
                state = .length(remaining: remaining - Int64(taken))
                if remaining - Int64(taken) > 0 { return nil }
            case .chunkData(let remaining):
                let taken = Int(min(remaining, Int64(bytes.count - index)))
                index += taken
                if remaining - Int64(taken) > 0 {
                    state = .chunkData(remaining: remaining - Int64(taken))
                    return nil
                }
                state = .chunkDataEnd
            default:
                guard index < bytes.count else { return nil }
                step(bytes[index])
                index += 1
            }
        }
    }

    /// One byte of a chunk-size line, a chunk's CRLF or a trailer line.
    private mutating func step(_ byte: UInt8) {
        switch state {
        case .chunkSize(let size, let inExtension):
            if byte == UInt8(ascii: "\n") {
                state = size == 0 ? .trailers(lineIsEmpty: true) : .chunkData(remaining: size)
            } else if !inExtension, let digit = Self.hexValue(byte) {
                // An absurd size is the parser's to reject; saturating keeps this from trapping first.
                let (shifted, overflow) = size.multipliedReportingOverflow(by: 16)
                state = .chunkSize(size: overflow ? .max : shifted | Int64(digit), inExtension: false)
            } else if byte != UInt8(ascii: "\r") {
                state = .chunkSize(size: size, inExtension: true)
            }
        case .chunkDataEnd:
            if byte == UInt8(ascii: "\n") { state = .chunkSize(size: 0, inExtension: false) }
        case .trailers(let lineIsEmpty):
            if byte == UInt8(ascii: "\n") {
                state = lineIsEmpty ? .complete : .trailers(lineIsEmpty: true)
            } else if byte != UInt8(ascii: "\r") {
                state = .trailers(lineIsEmpty: false)
            }
        default:
            break
        }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// The status code of a status line (`HTTP/1.1 200 …`, checked by the normalizer), 0 when it is too short.
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

    /// A field value that is one decimal number between optional whitespace, or `nil` (the normalizer passes on
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
