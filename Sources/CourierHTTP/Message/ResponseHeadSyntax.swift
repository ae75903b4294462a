#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The syntax rules of an HTTP/1.1 response head that the client applies before it parses the head
/// (RFC 9112 §2.2, §4; RFC 9110 §8.6): which heads are already strict, and how a lenient one is rewritten.
///
/// Pure functions on bytes; the transport's HTTP/1.1 codec buffers the bytes and calls them.
public enum ResponseHeadSyntax {
    /// The longest head accepted.
    public static let maximumHeadLength = 1 << 20

    /// `HTTP/d.d SP 3DIGIT`, then the end or a space and the reason phrase (RFC 9112 §4).
    public static func isStatusLine<Line: Collection<UInt8>>(_ line: Line) -> Bool where Line.Index == Int {
        let start = line.startIndex
        guard line.count >= 12, isStatusLinePrefix(line), isDigit(line[start + 5]),
            line[start + 6] == UInt8(ascii: "."), isDigit(line[start + 7]), line[start + 8] == UInt8(ascii: " "),
            (9...11).allSatisfy({ isDigit(line[start + $0]) })
        else { return false }
        return line.count == 12 || line[start + 12] == UInt8(ascii: " ")
    }

    /// ``isStatusLine(_:)`` for a line in place: not generic, so that a caller in another module does not run the
    /// generic version unspecialised (it allocated on every call).
    public static func isStatusLine(_ line: UnsafeRawBufferPointer) -> Bool {
        isStatusLine(line[...])
    }

    /// Whether the bytes start with `HTTP/`, as every status line does.
    public static func isStatusLinePrefix<Line: Collection<UInt8>>(_ bytes: Line) -> Bool {
        bytes.prefix(5).elementsEqual("HTTP/".utf8)
    }

    /// Whether a status line is a 1xx other than 101 (Switching Protocols): another head follows it.
    public static func isInterim<Line: Collection<UInt8>>(_ statusLine: Line) -> Bool where Line.Index == Int {
        let start = statusLine.startIndex
        guard statusLine.count >= 12 else { return false }
        let isSwitchingProtocols =
            statusLine[start + 10] == UInt8(ascii: "0") && statusLine[start + 11] == UInt8(ascii: "1")
        return statusLine[start + 9] == UInt8(ascii: "1") && !isSwitchingProtocols
    }

    /// Whether `bytes` start with a complete final (not 1xx) head that needs no rewriting: a status line, every
    /// line ended by CRLF with no other CR or LF, at most one `Content-Length` with one plain value. Looks at the
    /// bytes in place; anything else goes through ``rewrite(_:)``, which folds or rejects it.
    public static func startsWithStrictFinalHead(_ bytes: UnsafeRawBufferPointer) -> Bool {
        strictFinalHeadLength(bytes) != nil
    }

    /// The length of the strict final head `bytes` start with (see ``startsWithStrictFinalHead(_:)``), blank line
    /// included; `nil` when they do not start with one.
    public static func strictFinalHeadLength(_ bytes: UnsafeRawBufferPointer) -> Int? {
        // Line by line with memchr: every response's head passes here, and a byte-at-a-time loop over it was 1.3 % of
        // a small-request benchmark's CPU. A head longer than the limit is left to the slow path, which rejects it.
        guard let base = bytes.baseAddress else { return nil }
        let end = min(bytes.count, maximumHeadLength)
        var lineStart = 0
        var lineNumber = 0
        var contentLengths = 0
        while lineStart < end {
            guard let found = memchr(base + lineStart, Int32(UInt8(ascii: "\n")), end - lineStart) else {
                return nil  // the head does not end in these bytes
            }
            let lineFeed = base.distance(to: UnsafeRawPointer(found))
            // Every line ends in CRLF: a bare LF, or a CR anywhere else, needs the slow path.
            guard lineFeed > lineStart, bytes[lineFeed - 1] == UInt8(ascii: "\r") else { return nil }
            let line = UnsafeRawBufferPointer(rebasing: bytes[lineStart..<(lineFeed - 1)])
            if line.isEmpty { return lineNumber > 0 ? lineFeed + 1 : nil }  // the blank line: the head is complete
            if memchr(line.baseAddress!, Int32(UInt8(ascii: "\r")), line.count) != nil { return nil }
            // An obs-fold continuation (a line starting with SP or HTAB) needs unfolding.
            if lineNumber > 0, line[0] == UInt8(ascii: " ") || line[0] == UInt8(ascii: "\t") { return nil }
            if lineNumber == 0 {
                guard isStatusLine(line), !isInterim(line) else { return nil }
            } else if let value = contentLengthValue(line) {
                contentLengths += 1
                guard contentLengths == 1, isPlainLength(value) else { return nil }
            }
            lineNumber += 1
            lineStart = lineFeed + 1
        }
        return nil
    }

    /// Whether a complete head, split into its `lines` (without line ends), needs no rewriting: every line ended in
    /// CRLF (the head's byte count is the lines' plus two per line and two for the blank line), and at most one
    /// `Content-Length` line holds a single plain value.
    public static func isStrict(_ lines: [ArraySlice<UInt8>], head: ArraySlice<UInt8>) -> Bool {
        let crlfLength = lines.reduce(2) { $0 + $1.count + 2 }
        // Blank lines before the status line go through `rewrite`, which drops them; without them, the byte count
        // proves every line ended in CRLF (a leading bare LF could otherwise make up for a bare-LF line end).
        guard head.first != UInt8(ascii: "\r"), head.first != UInt8(ascii: "\n"), head.count == crlfLength else {
            return false
        }
        var contentLengthLines = 0
        for line in lines {
            // An obs-fold continuation line goes through `rewrite`, which unfolds it.
            if line.first == UInt8(ascii: " ") || line.first == UInt8(ascii: "\t") { return false }
            guard let value = contentLengthValue(line) else { continue }
            contentLengthLines += 1
            guard contentLengthLines == 1, isPlainLength(value) else { return false }
        }
        return true
    }

    /// The head with CRLF line ends, obs-folds replaced by a space (RFC 9112 §5.2: a user agent unfolds before
    /// interpreting), and at most one `Content-Length`: identical values, repeated or listed, count as one (RFC 9110
    /// §8.6).
    ///
    /// - Throws: `badServerResponse` for an invalid `Content-Length` or two different ones (a request-smuggling
    ///   defence: a proxy on the way may have framed the body by the other one); `cannotParseResponse` for a
    ///   continuation line right after the status line (there is no field to continue).
    public static func rewrite(_ lines: [ArraySlice<UInt8>]) throws(TransferError) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(lines.reduce(2) { $0 + $1.count + 2 })
        var contentLength: String?
        for line in try unfolded(lines) {
            if let value = contentLengthValue(line) {
                for value in value.split(separator: ",", omittingEmptySubsequences: false) {
                    guard isPlainLength(String(value)) else {
                        throw .badServerResponse(
                            "the response has an invalid Content-Length: \(HeaderParameters.trim(value))")
                    }
                    let normalized = String(Int64(HeaderParameters.trim(value)) ?? 0)
                    if let contentLength, contentLength != normalized {
                        throw .badServerResponse(
                            "the response has conflicting Content-Length values \(contentLength) and \(normalized)"
                        )
                    }
                    if contentLength == nil {
                        contentLength = normalized
                        output += "Content-Length: \(normalized)".utf8
                        output += [0x0D, 0x0A]
                    }
                }
                continue
            }
            output += line
            output += [0x0D, 0x0A]
        }
        output += [0x0D, 0x0A]
        return output
    }

    // MARK: - Helpers

    /// The lines with each obs-fold continuation (a line starting with SP or HTAB) joined to the field line before
    /// it by one space. A field's continuations are appended to one buffer that the field owns: joining each to a
    /// copy of the line so far cost time quadratic in the field's length (a megabyte of ` a` lines from a hostile
    /// server held the event loop for minutes).
    private static func unfolded(_ lines: [ArraySlice<UInt8>]) throws(TransferError) -> [ArraySlice<UInt8>] {
        let isContinuation = { (line: ArraySlice<UInt8>) in
            line.first == UInt8(ascii: " ") || line.first == UInt8(ascii: "\t")
        }
        guard lines.dropFirst().contains(where: isContinuation) else { return lines }
        var result: [ArraySlice<UInt8>] = []
        result.reserveCapacity(lines.count)
        // The last field line with the continuations seen so far, once it has one; it replaces the line in
        // `result` when the field ends.
        var joined: [UInt8]?
        for (index, line) in lines.enumerated() {
            guard index > 0, isContinuation(line) else {
                if let field = joined.take() { result[result.count - 1] = field[...] }
                result.append(line)
                continue
            }
            guard result.count > 1 else {
                throw .cannotParseResponse("the response head continues its status line with a folded line")
            }
            var field = joined.take() ?? Array(result[result.count - 1])
            while field.last == UInt8(ascii: " ") || field.last == UInt8(ascii: "\t") { field.removeLast() }
            let content = line.drop { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
            if !content.isEmpty {
                field.append(UInt8(ascii: " "))
                field.append(contentsOf: content)
            }
            joined = field
        }
        if let field = joined.take() { result[result.count - 1] = field[...] }
        return result
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    /// One `Content-Length` value: digits only (around optional whitespace), short enough for an `Int64`.
    private static func isPlainLength(_ value: String) -> Bool {
        ContentLengthValue.parse(value) != nil
    }

    /// The value of a `Content-Length` field line, or `nil` for any other line. Compares bytes: this runs for
    /// every header line of every response.
    private static func contentLengthValue<Line: Collection<UInt8>>(_ line: Line) -> String?
    where Line.Index == Int {
        // A static string, not a static array: a static stored property is a lazy global, checked with
        // `swift_once` on every header line (visible in the small-request profile).
        let name: StaticString = "content-length"
        let matches = name.withUTF8Buffer { name -> Bool in
            guard line.count > name.count, line[line.startIndex + name.count] == UInt8(ascii: ":") else { return false }
            for (offset, expected) in name.enumerated() {
                let byte = line[line.startIndex + offset]
                let lowered = (byte >= 0x41 && byte <= 0x5A) ? byte + 0x20 : byte
                if lowered != expected { return false }
            }
            return true
        }
        guard matches else { return nil }
        return String(decoding: line[(line.startIndex + name.utf8CodeUnitCount + 1)...], as: UTF8.self)
    }
}
