import CourierHTTP
import NIOCore
import NIOHTTP1

/// The HTTP/1.1 client codec of a connection: request parts out as bytes, bytes in as response parts.
///
/// It takes the place of NIO's `HTTPRequestEncoder` and `HTTPResponseDecoder` (llhttp), for two reasons:
///
/// - **The rules.** RFC 9112 and RFC 9110 allow a recipient leniencies that browsers and curl practise and llhttp
///   refuses: lines ending in a bare LF (§2.2), `Content-Length` repeated or listed with one value (RFC 9110 §8.6),
///   obs-fold continuation lines (§5.2). A lenient head is rewritten into its strict form (``ResponseHeadSyntax``) and
///   then parsed (``HTTP1ResponseHeadParser``); different `Content-Length` values, or one with `Transfer-Encoding`,
///   are rejected, since a proxy on the way may have framed the body by the other one (request smuggling). A first
///   line that is not a status line is rejected as soon as it is complete (`cannotParseResponse`).
/// - **The cost.** The body is framed here anyway (``ResponseBodyFraming``), so that bytes after a response never
///   reach the next one: a second parser behind it read every byte again, and each request and response part crossed
///   two more handlers, each unwrapping it with a dynamic cast. A small request's CPU went down by a tenth.
///
/// A response phase starts with each request head written; after a final (non-1xx) head the body's content is passed
/// on as it arrives (a chunked body without its framing), then the end. Bytes that come while no request waits, or
/// after a response's end, are announced (``BytesAfterResponse``) and dropped. After `101 Switching Protocols` the
/// bytes are held, and handed on when the codec is removed (the connection's new protocol takes them).
/// Lives on the connection's event loop.
final class HTTP1ClientCodec: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = HTTPClientResponsePart
    typealias OutboundIn = HTTPClientRequestPart
    typealias OutboundOut = IOData

    private enum Phase {
        /// Collecting a head: the bytes so far, where the lines completed are in them, and where the current line
        /// starts. Ranges, not slices: a slice shares `bytes`' storage, so every later append would copy the whole
        /// head (and each slice would keep its copy alive) — a head trickled a line per read would cost memory and
        /// time quadratic in its length.
        case head(bytes: [UInt8], lines: [Range<Int>], lineStart: Int)
        /// Passing the body on, up to its end.
        case body(ResponseBodyFraming)
        /// The response is complete: nothing may come until the next request.
        case ended
        /// After `101 Switching Protocols`: the bytes of the new protocol, held until the codec is removed.
        case switched(ByteBuffer?)
        /// The head or body was rejected, or bytes came after the response; nothing more is passed on.
        case failed
    }

    /// Sent up the pipeline, ahead of the parts that end a response, when the server sent more than its response
    /// (or sent bytes while no request was waiting, before the first included): the connection's framing cannot be
    /// trusted, and it must not be reused. The extra bytes are never passed on.
    struct BytesAfterResponse {}

    /// Nothing may come before the first request either: bytes a server (or a proxy, behind its CONNECT answer)
    /// sends first are no response.
    private var phase = Phase.ended
    /// The method of the request being answered: a response to HEAD has no body.
    private var requestMethod = "GET"
    /// The informational (1xx) heads passed on for the request being answered. Bounded here as well as in the
    /// exchange's handler (``InformationalResponseLimit``): the handler fails the exchange at the limit, but this loop
    /// would still go through the rest of the read, and a 256 KiB read holds some 18,000 minimal heads.
    private var informationalHeads = 0
    /// The request being written is framed in chunks (it has no length).
    private var requestIsChunked = false
    /// The channel closed, or the codec was removed, while it was passing parts on: it passes no more.
    private var isDone = false
    private let endpoint: Endpoint

    init(endpoint: Endpoint) {
        self.endpoint = endpoint
    }

    // MARK: - Requests

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head):
            requestMethod = head.method.rawValue
            informationalHeads = 0
            switch phase {
            case .body, .ended: phase = .head(bytes: [], lines: [], lineStart: 0)
            case .head, .failed, .switched: break
            }
            requestIsChunked = head.headers["Transfer-Encoding"].contains { HeaderName.equal($0, "chunked") }
            context.write(
                wrapOutboundOut(.byteBuffer(Self.encode(head, allocator: context.channel.allocator))),
                promise: promise)
        case .body(let body):
            guard requestIsChunked else { return context.write(wrapOutboundOut(body), promise: promise) }
            // An empty chunk would end the body: nothing goes out for it.
            guard body.readableBytes > 0 else {
                return context.write(wrapOutboundOut(.byteBuffer(ByteBuffer())), promise: promise)
            }
            var size = context.channel.allocator.buffer(capacity: 18)
            size.writeString(String(body.readableBytes, radix: 16))
            size.writeStaticString("\r\n")
            context.write(wrapOutboundOut(.byteBuffer(size)), promise: nil)
            context.write(wrapOutboundOut(body), promise: nil)
            context.write(wrapOutboundOut(.byteBuffer(ByteBuffer(staticString: "\r\n"))), promise: promise)
        case .end:
            // No trailers are ever sent.
            if requestIsChunked {
                context.write(wrapOutboundOut(.byteBuffer(ByteBuffer(staticString: "0\r\n\r\n"))), promise: promise)
            } else if let promise {
                context.write(wrapOutboundOut(.byteBuffer(ByteBuffer())), promise: promise)
            }
        }
    }

    /// The request line and the fields, in one buffer.
    private static func encode(_ head: HTTPRequestHead, allocator: ByteBufferAllocator) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: 512)
        buffer.writeString(head.method.rawValue)
        buffer.writeStaticString(" ")
        buffer.writeString(head.uri)
        buffer.writeStaticString(head.version == .http1_0 ? " HTTP/1.0\r\n" : " HTTP/1.1\r\n")
        for field in head.headers {
            buffer.writeString(field.name)
            buffer.writeStaticString(": ")
            buffer.writeString(field.value)
            buffer.writeStaticString("\r\n")
        }
        buffer.writeStaticString("\r\n")
        return buffer
    }

    // MARK: - Responses

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        if case .head(let held, _, _) = phase, held.isEmpty,
            let headLength = buffer.withUnsafeReadableBytes(ResponseHeadSyntax.strictFinalHeadLength)
        {
            // The common case: a whole, strict head at the start of this read, parsed where it lies.
            return finalHead(buffer, headLength: headLength, context: context)
        }
        switch phase {
        case .body(let framing):
            pass(buffer, framing: framing, context: context)
        case .ended:
            // Bytes while no request waits for them.
            phase = .failed
            context.fireUserInboundEventTriggered(BytesAfterResponse())
        case .switched(var held):
            held.setOrWriteBuffer(&buffer)
            phase = .switched(held)
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
            bytes.append(contentsOf: buffer.readableBytesView)
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
                let rest = bytes[lineStart...]
                guard ResponseHeadSyntax.isInterim(headLines[0]) else {
                    // The head and what followed it, in one buffer: the same path as a head that came whole.
                    var whole = context.channel.allocator.buffer(capacity: strictHead.count + rest.count)
                    whole.writeBytes(strictHead)
                    whole.writeBytes(rest)
                    return finalHead(whole, headLength: strictHead.count, context: context)
                }
                // 100 Continue and the like: the final head follows.
                guard informationalHead(strictHead, context: context) else { return }
                bytes = Array(rest)
                lines = []
                lineStart = 0
                scanFrom = 0
                crCheckedTo = 0
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

    /// Passes on an informational head; `false` when the codec must stop (the limit, or the exchange ended it).
    private func informationalHead(_ strictHead: [UInt8], context: ChannelHandlerContext) -> Bool {
        informationalHeads += 1
        if InformationalResponseLimit.isExceeded(by: informationalHeads) {
            reject(
                .badServerResponse(
                    "the server sent more than \(InformationalResponseLimit.maximumCount) informational (1xx) "
                        + "responses without a final one"),
                context)
            return false
        }
        let head: HTTPResponseHead
        do {
            head = try strictHead.withUnsafeBytes { bytes in
                Result { () throws(TransferError) in try HTTP1ResponseHeadParser.parse(bytes) }
            }.get()
        } catch {
            reject(error, context)
            return false
        }
        context.fireChannelRead(wrapInboundOut(.head(head)))
        return !isDone
    }

    /// A final head of `headLength` bytes at the start of `buffer`, then body bytes.
    private func finalHead(_ buffer: ByteBuffer, headLength: Int, context: ChannelHandlerContext) {
        let parsed: (HTTPResponseHead, ResponseBodyFraming)
        do {
            parsed = try Self.withReadableBytes(of: buffer) { bytes throws(TransferError) in
                let head = UnsafeRawBufferPointer(rebasing: bytes[..<headLength])
                return (
                    try HTTP1ResponseHeadParser.parse(head),
                    ResponseBodyFraming(head: head, requestMethod: requestMethod)
                )
            }
        } catch {
            return reject(error, context)
        }
        let (head, framing) = parsed
        var body = buffer
        body.moveReaderIndex(forwardBy: headLength)
        if head.status.code == 101 {
            // What follows is another protocol: held for whoever takes the connection over.
            phase = .switched(body.readableBytes > 0 ? body : nil)
            context.fireChannelRead(wrapInboundOut(.head(head)))
            if !isDone { context.fireChannelRead(wrapInboundOut(.end(nil))) }
            return
        }
        phase = .body(framing)
        pass(body, framing: framing, head: head, context: context)
    }

    /// Passes on `head`, if any, then the body's content in `buffer`, and the response's end when the body ends there;
    /// bytes after the end are announced (``BytesAfterResponse``) first, and dropped.
    private func pass(
        _ buffer: ByteBuffer, framing: ResponseBodyFraming, head: HTTPResponseHead? = nil,
        context: ChannelHandlerContext
    ) {
        var framing = framing
        // Most reads hold one run of content: kept without an array (an allocation per response).
        var firstContent: Range<Int>?
        var moreContent: [Range<Int>] = []
        let used: Int?
        do {
            used = try Self.withReadableBytes(of: buffer) { bytes throws(TransferError) in
                try framing.decode(bytes) { range in
                    if firstContent == nil { firstContent = range } else { moreContent.append(range) }
                }
            }
        } catch {
            return reject(error, context)
        }
        let ended = used != nil || framing.isComplete
        if let used, used < buffer.readableBytes {
            // Heard before the response's end, which may hand the connection to the next request.
            phase = .failed
            context.fireUserInboundEventTriggered(BytesAfterResponse())
            guard !isDone else { return }
        }
        // Set before the parts go on: the end may start the next request, and with it the next response.
        if ended {
            if case .body = phase { phase = .ended }
        } else {
            phase = .body(framing)
        }
        if let head {
            context.fireChannelRead(wrapInboundOut(.head(head)))
            if isDone { return }
        }
        // Each slice shares the read's storage: no copy. `false` once the codec must stop.
        func passContent(_ range: Range<Int>) -> Bool {
            if let slice = buffer.getSlice(at: buffer.readerIndex + range.lowerBound, length: range.count) {
                context.fireChannelRead(wrapInboundOut(.body(slice)))
            }
            return !isDone
        }
        if let firstContent, !passContent(firstContent) { return }
        for range in moreContent where !passContent(range) { return }
        if ended { context.fireChannelRead(wrapInboundOut(.end(nil))) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        let phase = self.phase
        self.phase = .failed
        isDone = true
        switch phase {
        case .head(let bytes, _, _) where !bytes.isEmpty:
            context.fireErrorCaught(Self.endedEarly(endpoint))
        case .body(let framing):
            if framing.endsAtClose {
                context.fireChannelRead(wrapInboundOut(.end(nil)))
            } else {
                context.fireErrorCaught(Self.endedEarly(endpoint))
            }
        default:
            break
        }
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        isDone = true
        // The bytes behind a 101 head belong to the connection's new protocol.
        if case .switched(let held) = phase, let held, held.readableBytes > 0 {
            phase = .failed
            context.fireChannelRead(NIOAny(held))
        }
    }

    /// `body` over `buffer`'s readable bytes, keeping its error's type (`ByteBuffer`'s own method rethrows it as
    /// `any Error`).
    private static func withReadableBytes<Value>(
        of buffer: ByteBuffer, _ body: (UnsafeRawBufferPointer) throws(TransferError) -> Value
    ) throws(TransferError) -> Value {
        try buffer.withUnsafeReadableBytes { bytes in Result { () throws(TransferError) in try body(bytes) } }.get()
    }

    private static func endedEarly(_ endpoint: Endpoint) -> TransferError {
        .networkConnectionLost("the connection closed before the response from \(endpoint) ended")
    }

    private func reject(_ error: TransferError, _ context: ChannelHandlerContext) {
        phase = .failed
        context.fireErrorCaught(error)
    }
}
