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
/// passes through untouched until the next request. A read that starts with a whole head that is already strict
/// passes as it came. The rules themselves are `CourierHTTP`'s `ResponseHeadSyntax`; this handler only buffers.
/// Lives on the connection's event loop.
final class ResponseHeadNormalizer: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = HTTPClientRequestPart
    typealias OutboundOut = HTTPClientRequestPart

    private enum Phase {
        /// Collecting a head: the bytes so far, where the lines completed are in them, and where the current line
        /// starts. Ranges, not slices: a slice shares `bytes`' storage, so every later append would copy the whole
        /// head (and each slice would keep its copy alive) — a head trickled a line per read would cost memory and
        /// time quadratic in its length.
        case head(bytes: [UInt8], lines: [Range<Int>], lineStart: Int)
        /// Passing the body through, up to its end.
        case body(ResponseBodyFraming)
        /// The response is complete: nothing may come until the next request.
        case ended
        /// The head was rejected, or bytes came after the response; nothing more is passed on.
        case failed
    }

    /// Sent up the pipeline, ahead of the bytes that end a response, when the server sent more than its response
    /// (or sent bytes while no request was waiting, before the first included): the connection's framing cannot be
    /// trusted, and it must not be reused. The extra bytes are never passed on: the parser would keep the start of
    /// a head and read it as the start of the next response.
    struct BytesAfterResponse {}

    /// Nothing may come before the first request either: bytes a server (or a proxy, behind its CONNECT answer)
    /// sends first are no response, and the start of a head kept from then would prefix the real response.
    private var phase = Phase.ended
    /// The method of the request being answered: a response to HEAD has no body.
    private var requestMethod = "GET"
    /// The informational (1xx) heads passed on for the request being answered. Bounded here as well as in the
    /// exchange's handler (``InformationalResponseLimit``): the handler fails the exchange at the limit, but this loop
    /// would still go through the rest of the read, copying what follows each head, and a 256 KiB read holds some
    /// 18,000 minimal heads (gigabytes copied, a second of the event loop).
    private var informationalHeads = 0

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .head(let head) = unwrapOutboundIn(data) {
            requestMethod = head.method.rawValue
            informationalHeads = 0
            switch phase {
            case .body, .ended: phase = .head(bytes: [], lines: [], lineStart: 0)
            case .head, .failed: break
            }
        }
        context.write(data, promise: promise)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        if case .head(let held, _, _) = phase, held.isEmpty,
            let headLength = buffer.withUnsafeReadableBytes(ResponseHeadSyntax.strictFinalHeadLength)
        {
            // The common case: a whole, strict head at the start of this read. It goes on as it came, together with
            // the body bytes behind it, without copying.
            let framing = buffer.withUnsafeReadableBytes { bytes in
                ResponseBodyFraming(
                    head: UnsafeRawBufferPointer(rebasing: bytes[..<headLength]), requestMethod: requestMethod)
            }
            return passBody(buffer, framing: framing, headLength: headLength, context: context)
        }
        switch phase {
        case .body(let framing):
            passBody(buffer, framing: framing, headLength: 0, context: context)
        case .ended:
            // Bytes while no request waits for them.
            phase = .failed
            context.fireUserInboundEventTriggered(BytesAfterResponse())
        case .failed:
            break
        case .head(var bytes, var lines, var lineStart):
            phase = .failed  // while `bytes` is held here, so it is not copied on write
            var scanFrom = bytes.count
            // Where the current line's search for a bare CR resumes: the reads before found none in it, bar a CR
            // at its very end, which the LF of this read may complete. Searching the whole line again on every read
            // cost time quadratic in its length: a server trickling a long line a few bytes per read kept the event
            // loop (and every connection on it) busy for minutes.
            var crCheckedTo = max(0, bytes.count - 1)
            bytes.append(contentsOf: buffer.readBytes(length: buffer.readableBytes) ?? [])
            while let newline = bytes[scanFrom...].firstIndex(of: UInt8(ascii: "\n")) {
                var line = lineStart..<newline
                if !line.isEmpty, bytes[newline - 1] == UInt8(ascii: "\r") { line = lineStart..<(newline - 1) }
                scanFrom = newline + 1
                lineStart = newline + 1
                if bytes[line].contains(UInt8(ascii: "\r")) {
                    return reject(.cannotParseResponse("the response head has a CR that does not end a line"), context)
                }
                if !line.isEmpty {
                    lines.append(line)
                    if lines.count == 1, !ResponseHeadSyntax.isStatusLine(bytes[line]) {
                        return reject(
                            .cannotParseResponse("the response is not HTTP: its first line is not a status line"),
                            context)
                    }
                    continue
                }
                if lines.isEmpty { continue }  // blank lines before the status line (RFC 9112 §2.2)
                // The limit holds for a head that arrived whole in one read too.
                if lineStart > ResponseHeadSyntax.maximumHeadLength {
                    return reject(.badServerResponse("the response head is longer than 1 MiB"), context)
                }
                // The end of a head. Most heads are already strict: pass them on as received, without rebuilding.
                let headLines = lines.map { bytes[$0] }
                let strictHead: [UInt8]
                if ResponseHeadSyntax.isStrict(headLines, head: bytes[..<lineStart]) {
                    strictHead = Array(bytes[..<lineStart])
                } else {
                    do {
                        strictHead = try ResponseHeadSyntax.rewrite(headLines)
                    } catch {
                        return reject(error, context)
                    }
                }
                let isInterim = ResponseHeadSyntax.isInterim(headLines[0])
                let rest = bytes[lineStart...]
                if isInterim {
                    informationalHeads += 1
                    if InformationalResponseLimit.isExceeded(by: informationalHeads) {
                        return reject(
                            .badServerResponse(
                                "the server sent more than \(InformationalResponseLimit.maximumCount) informational "
                                    + "(1xx) responses without a final one"),
                            context)
                    }
                    context.fireChannelRead(wrapInboundOut(ByteBuffer(bytes: strictHead)))
                    // 100 Continue and the like: the final head follows.
                    bytes = Array(rest)
                    lines = []
                    lineStart = 0
                    scanFrom = 0
                    crCheckedTo = 0
                    continue
                }
                let framing = strictHead.withUnsafeBytes {
                    ResponseBodyFraming(head: $0, requestMethod: requestMethod)
                }
                // The head and what followed it, in one buffer: the same path as a head that came whole.
                passBody(
                    ByteBuffer(bytes: strictHead + rest), framing: framing, headLength: strictHead.count,
                    context: context)
                return
            }
            if let bareCR = bytes[max(lineStart, crCheckedTo)...].firstIndex(of: UInt8(ascii: "\r")),
                bareCR < bytes.count - 1
            {
                return reject(.cannotParseResponse("the response head has a CR that does not end a line"), context)
            }
            if lines.isEmpty, bytes.count - lineStart >= 5, !ResponseHeadSyntax.isStatusLinePrefix(bytes[lineStart...])
            {
                return reject(.cannotParseResponse("the response is not HTTP: it does not start with HTTP/"), context)
            }
            if bytes.count > ResponseHeadSyntax.maximumHeadLength {
                return reject(.badServerResponse("the response head is longer than 1 MiB"), context)
            }
            phase = .head(bytes: bytes, lines: lines, lineStart: lineStart)
        }
    }

    /// Passes on `buffer` (a head of `headLength` bytes, then body bytes) up to the body's end; bytes after it are
    /// announced (``BytesAfterResponse``) and dropped.
    private func passBody(
        _ buffer: ByteBuffer, framing: ResponseBodyFraming, headLength: Int, context: ChannelHandlerContext
    ) {
        var framing = framing
        let bodyBytes = buffer.readableBytes - headLength
        let used = buffer.withUnsafeReadableBytes {
            framing.consume(UnsafeRawBufferPointer(rebasing: $0[headLength...]))
        }
        guard let used, used < bodyBytes else {
            phase = framing.isComplete ? .ended : .body(framing)
            if buffer.readableBytes > 0 { context.fireChannelRead(wrapInboundOut(buffer)) }
            return
        }
        phase = .failed
        context.fireUserInboundEventTriggered(BytesAfterResponse())
        if let response = buffer.getSlice(at: buffer.readerIndex, length: headLength + used) {
            context.fireChannelRead(wrapInboundOut(response))
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        // A head cut short: let the parser see it, so the error is the one for a response that ended early.
        if case .head(let bytes, _, _) = phase, !bytes.isEmpty {
            phase = .failed
            context.fireChannelRead(wrapInboundOut(ByteBuffer(bytes: bytes)))
        }
        context.fireChannelInactive()
    }

    private func reject(_ error: TransferError, _ context: ChannelHandlerContext) {
        phase = .failed
        context.fireErrorCaught(error)
    }
}
