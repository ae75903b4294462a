import CourierHTTP
import NIOCore
import NIOHTTP1

/// Rewrites each response head into the strict form NIO's parser (llhttp) accepts, for the leniencies
/// RFC 9112 and RFC 9110 allow a recipient and that browsers and curl practise:
///
/// - lines ending in a bare LF (RFC 9112 §2.2) are ended with CRLF; a bare CR anywhere is rejected;
/// - `Content-Length` given several times, or as a list, with one value (RFC 9110 §8.6) becomes one field;
///   different values are rejected, since a proxy on the way may have framed the body by the other one
///   (request smuggling).
///
/// It also rejects a first line that is not an HTTP status line as soon as that line is complete, so the
/// error says that the response cannot be parsed (`cannotParseResponse`) rather than that it broke the protocol.
///
/// Only heads are touched. A head phase starts with each request written (it sits between the request encoder
/// and the response decoder, and sees the request parts go out); after a final (non-1xx) head, every byte
/// passes through untouched until the next request. Lives on the connection's event loop.
final class ResponseHeadNormalizer: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = HTTPClientRequestPart
    typealias OutboundOut = HTTPClientRequestPart

    /// Longest head accepted (NIO's parser has its own, smaller limit on the fields).
    static let maximumHeadLength = 1 << 20

    private enum Phase {
        /// Collecting a head: the bytes so far, the lines completed, and where the current line starts.
        case head(bytes: [UInt8], lines: [ArraySlice<UInt8>], lineStart: Int)
        /// Passing bytes through until the next request.
        case body
        /// The head was rejected; nothing more is passed on.
        case failed
    }

    private var phase = Phase.head(bytes: [], lines: [], lineStart: 0)

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .head = unwrapOutboundIn(data), case .body = phase {
            phase = .head(bytes: [], lines: [], lineStart: 0)
        }
        context.write(data, promise: promise)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        switch phase {
        case .body:
            context.fireChannelRead(data)
        case .failed:
            break
        case .head(let held, _, _) where held.isEmpty && Self.startsWithStrictFinalHead(buffer):
            // The common case: a whole, strict head at the start of this read. It goes on as it came, together with
            // the body bytes behind it, without copying.
            phase = .body
            context.fireChannelRead(data)
        case .head(var bytes, var lines, var lineStart):
            phase = .failed  // while `bytes` is held here, so it is not copied on write
            var scanFrom = bytes.count
            bytes.append(contentsOf: buffer.readBytes(length: buffer.readableBytes) ?? [])
            while let newline = bytes[scanFrom...].firstIndex(of: UInt8(ascii: "\n")) {
                var line = bytes[lineStart..<newline]
                if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
                scanFrom = newline + 1
                lineStart = newline + 1
                if line.contains(UInt8(ascii: "\r")) {
                    return reject(.cannotParseResponse("the response head has a CR that does not end a line"), context)
                }
                if !line.isEmpty {
                    lines.append(line)
                    if lines.count == 1, !Self.isStatusLine(line) {
                        return reject(
                            .cannotParseResponse("the response is not HTTP: its first line is not a status line"),
                            context)
                    }
                    continue
                }
                if lines.isEmpty { continue }  // blank lines before the status line (RFC 9112 §2.2)
                // The end of a head. Most heads are already strict: pass them on as received, without rebuilding.
                if Self.isStrict(lines, head: bytes[..<lineStart]) {
                    context.fireChannelRead(wrapInboundOut(ByteBuffer(bytes: bytes[..<lineStart])))
                } else {
                    let rewritten: [UInt8]
                    do {
                        rewritten = try Self.rewrite(lines)
                    } catch {
                        return reject(error, context)
                    }
                    context.fireChannelRead(wrapInboundOut(ByteBuffer(bytes: rewritten)))
                }
                let rest = bytes[lineStart...]
                if Self.isInterim(lines[0]) {
                    // 100 Continue and the like: the final head follows.
                    bytes = Array(rest)
                    lines = []
                    lineStart = 0
                    scanFrom = 0
                    continue
                }
                phase = .body
                if !rest.isEmpty { context.fireChannelRead(wrapInboundOut(ByteBuffer(bytes: rest))) }
                return
            }
            if let bareCR = bytes[lineStart...].firstIndex(of: UInt8(ascii: "\r")), bareCR < bytes.count - 1 {
                return reject(.cannotParseResponse("the response head has a CR that does not end a line"), context)
            }
            if lines.isEmpty, bytes.count - lineStart >= 5, !Self.isStatusLinePrefix(bytes[lineStart...]) {
                return reject(.cannotParseResponse("the response is not HTTP: it does not start with HTTP/"), context)
            }
            if bytes.count > Self.maximumHeadLength {
                return reject(.badServerResponse("the response head is longer than 1 MiB"), context)
            }
            phase = .head(bytes: bytes, lines: lines, lineStart: lineStart)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        // A head cut short: let the parser see it, so the error is the one for a response that ended early.
        if case .head(let bytes, _, _) = phase, !bytes.isEmpty {
            phase = .body
            context.fireChannelRead(wrapInboundOut(ByteBuffer(bytes: bytes)))
        }
        context.fireChannelInactive()
    }

    private func reject(_ error: TransferError, _ context: ChannelHandlerContext) {
        phase = .failed
        context.fireErrorCaught(error)
    }

    // MARK: - Rules

    /// `HTTP/d.d SP 3DIGIT`, then the end or a space and the reason phrase (RFC 9112 §4).
    static func isStatusLine<Line: Collection<UInt8>>(_ line: Line) -> Bool where Line.Index == Int {
        let start = line.startIndex
        guard line.count >= 12, isStatusLinePrefix(line), isDigit(line[start + 5]),
            line[start + 6] == UInt8(ascii: "."), isDigit(line[start + 7]), line[start + 8] == UInt8(ascii: " "),
            (9...11).allSatisfy({ isDigit(line[start + $0]) })
        else { return false }
        return line.count == 12 || line[start + 12] == UInt8(ascii: " ")
    }

    private static func isStatusLinePrefix<Line: Collection<UInt8>>(_ bytes: Line) -> Bool {
        bytes.prefix(5).elementsEqual("HTTP/".utf8)
    }

    /// A 1xx status other than 101 (Switching Protocols): another head follows.
    private static func isInterim<Line: Collection<UInt8>>(_ statusLine: Line) -> Bool where Line.Index == Int {
        let start = statusLine.startIndex
        guard statusLine.count >= 12 else { return false }
        let isSwitchingProtocols =
            statusLine[start + 10] == UInt8(ascii: "0") && statusLine[start + 11] == UInt8(ascii: "1")
        return statusLine[start + 9] == UInt8(ascii: "1") && !isSwitchingProtocols
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    /// The head with CRLF line ends and at most one `Content-Length`.
    static func rewrite(_ lines: [ArraySlice<UInt8>]) throws(TransferError) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(lines.reduce(2) { $0 + $1.count + 2 })
        var contentLength: String?
        for line in lines {
            if let value = contentLengthValue(line) {
                let values = value.split(separator: ",", omittingEmptySubsequences: false).map {
                    $0.trimmingOWS()
                }
                for value in values {
                    guard !value.isEmpty, value.utf8.allSatisfy(isDigit), value.utf8.count <= 18 else {
                        throw .badServerResponse("the response has an invalid Content-Length: \(value)")
                    }
                    let normalized = String(Int64(value) ?? 0)
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

    /// Whether `buffer` starts with a complete final (not 1xx) head that needs no rewriting: a status line, every
    /// line ended by CRLF with no other CR or LF, at most one `Content-Length` with one plain value. Looks at the
    /// bytes in place; anything else takes the general path, which rewrites or rejects it.
    static func startsWithStrictFinalHead(_ buffer: ByteBuffer) -> Bool {
        buffer.withUnsafeReadableBytes { bytes -> Bool in
            var lineStart = 0
            var lineNumber = 0
            var contentLengths = 0
            var index = 0
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\r") {
                    // Only as the first half of CRLF.
                    guard index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "\n") else { return false }
                    let line = UnsafeRawBufferPointer(rebasing: bytes[lineStart..<index])
                    if line.isEmpty { return lineNumber > 0 }  // the blank line: the head is complete
                    if lineNumber == 0 {
                        guard isStatusLine(line), !isInterim(line) else { return false }
                    } else if let value = contentLengthValue(line) {
                        contentLengths += 1
                        let digits = Substring(value).trimmingOWS()
                        guard contentLengths == 1, !digits.isEmpty, digits.utf8.count <= 18,
                            digits.utf8.allSatisfy(isDigit)
                        else { return false }
                    }
                    lineNumber += 1
                    index += 2
                    lineStart = index
                    continue
                }
                if byte == UInt8(ascii: "\n") { return false }  // a bare LF
                index += 1
                if index - lineStart > maximumHeadLength { return false }
            }
            return false  // the head does not end in this read
        }
    }

    /// Whether a complete head needs no rewriting: every line ended in CRLF (the head's byte count is the lines'
    /// plus two per line and two for the blank line), and at most one `Content-Length` line holds a single valid
    /// value.
    static func isStrict(_ lines: [ArraySlice<UInt8>], head: ArraySlice<UInt8>) -> Bool {
        let crlfLength = lines.reduce(2) { $0 + $1.count + 2 }
        // Blank lines before the status line go through `rewrite`, which drops them; without them, the byte count
        // proves every line ended in CRLF (a leading bare LF could otherwise make up for a bare-LF line end).
        guard head.first != UInt8(ascii: "\r"), head.first != UInt8(ascii: "\n"), head.count == crlfLength else {
            return false
        }
        var contentLengthLines = 0
        for line in lines {
            guard let value = contentLengthValue(line) else { continue }
            contentLengthLines += 1
            let digits = Substring(value).trimmingOWS()
            // Anything but one plain value goes through `rewrite`, which folds or rejects it.
            guard contentLengthLines == 1, !digits.isEmpty, digits.utf8.count <= 18, digits.utf8.allSatisfy(isDigit)
            else { return false }
        }
        return true
    }

    private static let contentLengthName = Array("content-length".utf8)

    /// The value of a `Content-Length` field line, or `nil` for any other line. Compares bytes: this runs for
    /// every header line of every response.
    private static func contentLengthValue<Line: Collection<UInt8>>(_ line: Line) -> String?
    where Line.Index == Int {
        let name = contentLengthName
        guard line.count > name.count, line[line.startIndex + name.count] == UInt8(ascii: ":") else { return nil }
        for (offset, expected) in name.enumerated() {
            let byte = line[line.startIndex + offset]
            let lowered = (byte >= 0x41 && byte <= 0x5A) ? byte + 0x20 : byte
            if lowered != expected { return nil }
        }
        return String(decoding: line[(line.startIndex + name.count + 1)...], as: UTF8.self)
    }
}

extension Substring {
    /// Without leading and trailing spaces and tabs.
    fileprivate func trimmingOWS() -> String {
        let isOWS: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        return String(drop(while: isOWS).reversed().drop(while: isOWS).reversed())
    }
}
