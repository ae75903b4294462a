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
        case .head(let held, _, _)
        where held.isEmpty && buffer.withUnsafeReadableBytes(ResponseHeadSyntax.startsWithStrictFinalHead):
            // The common case: a whole, strict head at the start of this read. It goes on as it came, together with
            // the body bytes behind it, without copying.
            phase = .body
            context.fireChannelRead(data)
        case .head(var bytes, var lines, var lineStart):
            phase = .failed  // while `bytes` is held here, so it is not copied on write
            var scanFrom = bytes.count
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
                if ResponseHeadSyntax.isStrict(headLines, head: bytes[..<lineStart]) {
                    context.fireChannelRead(wrapInboundOut(ByteBuffer(bytes: bytes[..<lineStart])))
                } else {
                    let rewritten: [UInt8]
                    do {
                        rewritten = try ResponseHeadSyntax.rewrite(headLines)
                    } catch {
                        return reject(error, context)
                    }
                    context.fireChannelRead(wrapInboundOut(ByteBuffer(bytes: rewritten)))
                }
                let isInterim = ResponseHeadSyntax.isInterim(headLines[0])
                let rest = bytes[lineStart...]
                if isInterim {
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
}
