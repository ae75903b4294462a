import CourierHTTP
import NIOHTTP1

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Turns a strict HTTP/1.1 response head into NIO's `HTTPResponseHead`, checking what RFC 9112 asks of each line
/// (§4: the status line; §5: field lines). A head is strict once ``ResponseHeadSyntax`` has passed or rewritten it:
/// every line ends in CRLF, no obs-fold is left, at most one `Content-Length` holds one plain value, and the first
/// line has the shape of a status line.
///
/// A pure function of the bytes; the HTTP/1.1 codec calls it on the connection's event loop for every head.
enum HTTP1ResponseHeadParser {
    /// The most bytes of field names and values a head may carry (80 KiB, NIO's and llhttp's default, which this
    /// parser replaced; curl allows 100 KiB). The bytes of the head itself, whitespace included, are bounded at
    /// 1 MiB while it is collected (``ResponseHeadSyntax/maximumHeadLength``).
    static let maximumFieldBytes = 80 * 1024

    /// The head `bytes` (its blank line included) as NIO's value.
    ///
    /// - Throws: `cannotParseResponse` for a line that is not HTTP syntax (a field name that is not a token, a
    ///   control character in a value or the reason phrase, a line without a colon, an HTTP version other than 1.x);
    ///   `badServerResponse` for fields longer than ``maximumFieldBytes``, or a head that frames its body twice (`Transfer-Encoding` with `Content-Length`: RFC
    ///   9112 §6.1 calls it smuggling, and a proxy on the way may have framed it by the other field).
    static func parse(_ bytes: UnsafeRawBufferPointer) throws(TransferError) -> HTTPResponseHead {
        guard let base = bytes.baseAddress else { throw .cannotParseResponse("the response head is empty") }
        var lineStart = 0
        var status: (version: HTTPVersion, code: Int, reason: String)?
        var fields: [(String, String)] = []
        // Most heads have fewer fields: one allocation instead of the array's doublings.
        fields.reserveCapacity(16)
        var hasContentLength = false
        var hasTransferEncoding = false
        var fieldBytes = 0
        while lineStart < bytes.count,
            let found = memchr(base + lineStart, Int32(UInt8(ascii: "\n")), bytes.count - lineStart)
        {
            let lineFeed = base.distance(to: UnsafeRawPointer(found))
            // Strict: the byte before each LF is its CR.
            let line = UnsafeRawBufferPointer(rebasing: bytes[lineStart..<max(lineStart, lineFeed - 1)])
            lineStart = lineFeed + 1
            if line.isEmpty { break }
            guard status != nil else {
                status = try statusLine(line)
                continue
            }
            let field = try fieldLine(line)
            fieldBytes += field.0.utf8.count + field.1.utf8.count
            if fieldBytes > maximumFieldBytes {
                throw .badServerResponse("the response's header fields are longer than \(maximumFieldBytes >> 10) KiB")
            }
            if !hasContentLength, HeaderName.equal(field.0, "Content-Length") { hasContentLength = true }
            if !hasTransferEncoding, HeaderName.equal(field.0, "Transfer-Encoding") { hasTransferEncoding = true }
            fields.append(field)
        }
        guard let status else { throw .cannotParseResponse("the response has no status line") }
        if hasContentLength && hasTransferEncoding {
            throw .badServerResponse("the response has both Transfer-Encoding and Content-Length")
        }
        return HTTPResponseHead(
            version: status.version,
            status: HTTPResponseStatus(statusCode: status.code, reasonPhrase: status.reason),
            headers: HTTPHeaders(fields))
    }

    /// `HTTP/1.x SP 3DIGIT [SP reason-phrase]`; the shape was checked (``ResponseHeadSyntax/isStatusLine(_:)``).
    private static func statusLine(
        _ line: UnsafeRawBufferPointer
    ) throws(TransferError) -> (version: HTTPVersion, code: Int, reason: String) {
        guard ResponseHeadSyntax.isStatusLine(line) else {
            throw .cannotParseResponse("the response is not HTTP: its first line is not a status line")
        }
        let major = Int(line[5] - UInt8(ascii: "0"))
        let minor = Int(line[7] - UInt8(ascii: "0"))
        guard major == 1 else {
            throw .cannotParseResponse("the response speaks HTTP/\(major).\(minor) on an HTTP/1.1 connection")
        }
        let code = (9...11).reduce(0) { $0 * 10 + Int(line[$1] - UInt8(ascii: "0")) }
        let reasonBytes =
            line.count > 13
            ? UnsafeRawBufferPointer(rebasing: line[13...])
            : UnsafeRawBufferPointer(
                start: nil, count: 0)
        // reason-phrase = 1*( HTAB / SP / VCHAR / obs-text )
        guard !reasonBytes.contains(where: FieldList.isControl) else {
            throw .cannotParseResponse("the response's reason phrase has a control character")
        }
        return (HTTPVersion(major: major, minor: minor), code, String(decoding: reasonBytes, as: UTF8.self))
    }

    /// `field-name ":" OWS field-value OWS` (RFC 9112 §5.1): no whitespace before the colon.
    private static func fieldLine(_ line: UnsafeRawBufferPointer) throws(TransferError) -> (String, String) {
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
            throw .cannotParseResponse("a line of the response head is not a field: it has no colon")
        }
        let name = UnsafeRawBufferPointer(rebasing: line[..<colon])
        guard !name.isEmpty, name.allSatisfy(Token.isTokenByte) else {
            throw .cannotParseResponse("the response has a field name that is not a token")
        }
        var valueStart = colon + 1
        var valueEnd = line.count
        while valueStart < valueEnd, isWhitespace(line[valueStart]) { valueStart += 1 }
        while valueEnd > valueStart, isWhitespace(line[valueEnd - 1]) { valueEnd -= 1 }
        let value = UnsafeRawBufferPointer(rebasing: line[valueStart..<valueEnd])
        // field-value = *( VCHAR / obs-text / SP / HTAB ): a NUL or another control character is refused, as llhttp
        // and browsers do; what the app would read could differ from what a proxy on the way read.
        guard !value.contains(where: FieldList.isControl) else {
            throw .cannotParseResponse("the response has a control character in the value of a field")
        }
        return (String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self))
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t")
    }
}
