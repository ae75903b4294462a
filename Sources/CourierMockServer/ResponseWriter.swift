import NIOCore
import NIOHTTP1

/// Writes one ``MockResponse`` on a connection, honouring its delays, chunking and truncation, with backpressure:
/// body bytes are only produced while the channel is writable.
///
/// Lives on the connection's event loop; all methods must be called there.
final class ResponseWriter {
    private let context: ChannelHandlerContext
    private let response: MockResponse
    private let head: ResponseHead
    private let closing: Bool
    private let onFinish: () -> Void

    /// Next body offset to write.
    private var offset: Int64
    /// End of the body range the response represents.
    private let end: Int64
    /// End of the bytes actually sent (before `end` when the body is truncated).
    private let sendEnd: Int64
    /// Where the body stalls for good (``MockResponse/stallAfterBodyBytes``), if it does.
    private let stallAt: Int64?
    private var waitingForWritability = false
    private var scheduled: Scheduled<Void>?
    private var isCancelled = false

    /// Creates a writer.
    ///
    /// - Parameters:
    ///   - context: The context of the connection handler.
    ///   - response: The response to write.
    ///   - isHeadRequest: Whether the request was `HEAD`.
    ///   - closing: Whether to close the connection after the response.
    ///   - onFinish: Called when a keep-alive response is completely written, so the next request can be answered.
    init(
        context: ChannelHandlerContext,
        response: MockResponse,
        isHeadRequest: Bool,
        closing: Bool,
        onFinish: @escaping () -> Void
    ) {
        let fullLength = response.body.length
        let range = response.bodyRange.map { $0.clamped(to: 0..<fullLength) } ?? 0..<fullLength
        self.context = context
        self.response = response
        self.offset = range.lowerBound
        self.end = range.upperBound
        let truncated = response.closeAfterBodyBytes.map { range.lowerBound + Int64(max(0, $0)) }
        self.sendEnd = min(range.upperBound, truncated ?? range.upperBound)
        self.stallAt = response.stallAfterBodyBytes.map { range.lowerBound + Int64(max(0, $0)) }
        self.closing = closing || response.closeAfterBodyBytes != nil
        self.head = ResponseHead(
            response: response,
            bodyLength: range.upperBound - range.lowerBound,
            isHeadRequest: isHeadRequest,
            closing: self.closing
        )
        self.onFinish = onFinish
    }

    /// Starts writing, after the head delay if there is one.
    func start() {
        if !response.informational.isEmpty {
            var text = ""
            for interim in response.informational {
                text += "HTTP/1.1 \(interim.status) \(HTTPResponseStatus(statusCode: interim.status).reasonPhrase)\r\n"
                for header in interim.headers { text += "\(header.name): \(header.value)\r\n" }
                text += "\r\n"
            }
            var buffer = context.channel.allocator.buffer(capacity: text.utf8.count)
            buffer.writeString(text)
            context.writeAndFlush(NIOAny(buffer), promise: nil)
        }
        after(response.headDelay) { $0.writeHead() }
    }

    /// Stops writing; called when the connection closes.
    func cancel() {
        isCancelled = true
        scheduled?.cancel()
        scheduled = nil
    }

    /// Resumes writing the body when the channel becomes writable again.
    func writabilityChanged() {
        guard waitingForWritability, context.channel.isWritable else { return }
        waitingForWritability = false
        pump()
    }

    private func after(_ delay: Duration, _ body: @escaping (ResponseWriter) -> Void) {
        guard delay > .zero else {
            body(self)
            return
        }
        scheduled = context.eventLoop.assumeIsolated().scheduleTask(in: TimeAmount(delay)) {
            self.scheduled = nil
            guard !self.isCancelled else { return }
            body(self)
        }
    }

    private func writeHead() {
        guard !isCancelled else { return }
        var buffer = context.channel.allocator.buffer(capacity: head.bytes.utf8.count)
        buffer.writeString(head.bytes)
        context.write(NIOAny(buffer), promise: nil)
        if head.hasBody {
            pump()
        } else {
            finish(writeTerminator: false)
        }
    }

    private func pump() {
        while !isCancelled {
            guard offset < sendEnd else {
                finish(writeTerminator: head.isChunked && sendEnd == end)
                return
            }
            if let stallAt, offset >= stallAt {
                context.flush()
                return
            }
            guard context.channel.isWritable else {
                waitingForWritability = true
                context.flush()
                return
            }
            let count = Int(min(Int64(max(1, response.chunkSize)), min(sendEnd, stallAt ?? sendEnd) - offset))
            var buffer = context.channel.allocator.buffer(capacity: count + 32)
            if head.isChunked {
                buffer.writeString(String(count, radix: 16) + "\r\n")
            }
            response.body.write(offset: offset, count: count, into: &buffer)
            if head.isChunked {
                buffer.writeString("\r\n")
            }
            offset += Int64(count)
            context.writeAndFlush(NIOAny(buffer), promise: nil)
            if response.chunkDelay > .zero && offset < sendEnd {
                after(response.chunkDelay) { $0.pump() }
                return
            }
        }
    }

    private func finish(writeTerminator: Bool) {
        guard !isCancelled else { return }
        var buffer = context.channel.allocator.buffer(capacity: 8)
        if writeTerminator {
            buffer.writeString("0\r\n\r\n")
        }
        if let trailing = response.trailingBytes { buffer.writeBytes(trailing) }
        let written = context.writeAndFlush(NIOAny(buffer))
        if closing {
            let context = self.context
            let withoutTLSCloseNotify = response.closesWithoutTLSCloseNotify
            written.assumeIsolated().whenComplete { _ in
                ConnectionHandler.close(context, withoutTLSCloseNotify: withoutTLSCloseNotify)
            }
        } else {
            onFinish()
        }
    }
}
